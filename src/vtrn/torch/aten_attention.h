// Installs ATen's CPU flash attention where the runtime computes float32 attention
// (runtime/aten_attention.h), so that scaled_dot_product_attention's output on `neuron` is the
// CPU's bits.
#pragma once

namespace vtrn::torch_adapter {

void install_aten_attention();

}  // namespace vtrn::torch_adapter
