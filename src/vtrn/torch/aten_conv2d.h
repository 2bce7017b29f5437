// Installs ATen's CPU convolution where the runtime computes float32 2-D convolutions
// (runtime/aten_conv2d.h), so that they are the CPU's bits.
#pragma once

namespace vtrn::torch_adapter {

void install_aten_conv2d();

}  // namespace vtrn::torch_adapter
