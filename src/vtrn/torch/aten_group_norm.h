// Installs ATen's CPU group norm and its backward where the runtime computes float32 group
// norms (runtime/aten_group_norm.h), so that they are the CPU's bits.
#pragma once

namespace vtrn::torch_adapter {

void install_aten_group_norm();

}  // namespace vtrn::torch_adapter
