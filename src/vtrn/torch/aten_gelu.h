// Installs ATen's CPU GELU kernels where the runtime computes torch's exact GELU
// (runtime/aten_gelu.h), so that float32 gelu and its gradient give the CPU's bits on `neuron`.
#pragma once

namespace vtrn::torch_adapter {

void install_aten_gelu();

}  // namespace vtrn::torch_adapter
