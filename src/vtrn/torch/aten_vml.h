// Installs libtorch's MKL VML functions as the runtime's ATen unary functions
// (runtime/aten_unary.h), so that torch.exp, log, sqrt, sin, cos and tanh on float32 give the
// CPU's bits on `neuron`.
#pragma once

namespace vtrn::torch_adapter {

/// Looks the functions up in the loaded libtorch_cpu and installs the ones it exports (x86
/// builds with MKL export them all; others none). Returns how many it installed.
int install_aten_vml();

}  // namespace vtrn::torch_adapter
