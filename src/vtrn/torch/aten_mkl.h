// Installs libtorch's MKL functions where the runtime computes as ATen does with them:
// VML's exp, log, sqrt, sin, cos and tanh (runtime/aten_unary.h) and sgemm for float32 mm and
// bmm (runtime/aten_matmul.h), so that those ops give the CPU's bits on `neuron`.
#pragma once

#include <string>
#include <vector>

namespace vtrn::torch_adapter {

/// Looks the functions up in the loaded libtorch_cpu and installs the ones it exports (x86
/// builds with MKL export them all; others none). Returns the names of those installed.
std::vector<std::string> install_aten_mkl();

}  // namespace vtrn::torch_adapter
