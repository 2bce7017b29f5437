// `custom_call @vtrn.aten_gelu` and `@vtrn.aten_gelu_backward`: torch's exact (erf) GELU and
// its gradient over float32, computed by ATen's own CPU kernel where the process has torch.
// For a contiguous float32 tensor that kernel is oneDNN's eltwise gelu_erf (torch's bundled
// oneDNN; Debian's older one agrees on a quarter of the elements), which no formula of StableHLO
// ops reproduces.
//
//   aten_gelu:          (x)     -> y      x and y of one float32 shape
//   aten_gelu_backward: (dy, x) -> dx     all of one float32 shape
//
// No backend_config. The compiler prices a call as a Scalar-engine activation pass; the
// executor runs it with the function the torch layer installed (runtime/aten_gelu.h), else
// ATen's scalar formula.
#pragma once

#include <cstdint>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenGeluTarget = "vtrn.aten_gelu";
inline constexpr std::string_view kAtenGeluBackwardTarget = "vtrn.aten_gelu_backward";

/// Whether |op| calls either kernel.
bool is_aten_gelu(const hlo::Op& op);
/// The elements of the call's result; throws hlo::Error naming what is wrong when its operands
/// and result are not the form above.
std::int64_t aten_gelu_elements(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
