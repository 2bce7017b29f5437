// Installs ATen's CPU batch norm and its backward where the runtime computes float32 batch
// norms (runtime/aten_batch_norm.h), so that they are the CPU's bits.
#pragma once

namespace vtrn::torch_adapter {

void install_aten_batch_norm();

}  // namespace vtrn::torch_adapter
