// Internal to the executor: the host implementation of `custom_call @vtrn.aten_norm`
// (compiler/aten_norm.h), registered for its target.
#pragma once

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::kernels {

/// x [rows, n] -> [rows]: each row's norm in ATen's order (runtime/aten_norm.h), rows split
/// over the executor's threads (a row is one thread's, so the bits do not depend on them).
void aten_norm(const CustomCallArgs& args);

}  // namespace vtrn::runtime::kernels
