// Internal to the executor: the host implementations of `custom_call @vtrn.aten_norm`
// (compiler/aten_norm.h) and `custom_call @vtrn.aten_layer_norm` (compiler/aten_layer_norm.h),
// registered for their targets.
#pragma once

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::kernels {

/// x [rows, n] -> [rows]: each row's norm in ATen's order (runtime/aten_norm.h), rows split
/// over the executor's threads (a row is one thread's, so the bits do not depend on them).
void aten_norm(const CustomCallArgs& args);

/// (x [rows, n], gamma?, beta?) -> (y, mean, rstd): each row as ATen's layer norm computes it
/// (runtime/aten_layer_norm.h), rows split over the executor's threads.
void aten_layer_norm(const CustomCallArgs& args);

}  // namespace vtrn::runtime::kernels
