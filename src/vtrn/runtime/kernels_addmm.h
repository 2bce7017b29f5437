// Internal to the executor: the host implementation of `custom_call @vtrn.aten_addmm`
// (compiler/aten_addmm.h), registered for its target.
#pragma once

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::kernels {

/// ([c,] lhs, rhs, alpha) -> alpha * lhs x rhs + beta * c, through ATen's sgemm call where the
/// torch layer installed it (runtime/aten_matmul.h), else one BLAS sgemm with the same alpha
/// and beta onto c.
void aten_addmm(const CustomCallArgs& args);

}  // namespace vtrn::runtime::kernels
