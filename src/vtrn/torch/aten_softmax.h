// Installs ATen's CPU softmax and log_softmax kernels, forward and backward, where the runtime
// computes them over float32 rows (runtime/aten_softmax.h), so that they are the CPU's bits.
#pragma once

namespace vtrn::torch_adapter {

void install_aten_softmax();

}  // namespace vtrn::torch_adapter
