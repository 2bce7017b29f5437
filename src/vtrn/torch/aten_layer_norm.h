// Installs ATen's CPU layer norm backward where the runtime computes float32 layer norm
// gradients (runtime/aten_layer_norm_backward.h), so that they are the CPU's bits.
#pragma once

namespace vtrn::torch_adapter {

void install_aten_layer_norm();

}  // namespace vtrn::torch_adapter
