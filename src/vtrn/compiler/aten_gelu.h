// `custom_call @vtrn.aten_gelu` and `@vtrn.aten_gelu_backward`: torch's exact (erf) GELU and
// its gradient over float32, computed by ATen's own CPU kernel where the process has torch.
// For a contiguous float32 tensor that kernel is oneDNN's eltwise gelu_erf (torch's bundled
// oneDNN; Debian's older one agrees on a quarter of the elements), which no formula of StableHLO
// ops reproduces. `@vtrn.aten_gelu_tanh` and `_backward` are the tanh approximation
// (approximate="tanh"): ATen's vector loop rounds its products its own way (some fused by the
// compiler that built it) and its scalar tail takes libm's tanh, so formulas of ops matched
// whole vectors of the forward only and 70% of the gradient.
//
//   aten_gelu[_tanh]:          (x)     -> y      x and y of one float32 shape
//   aten_gelu[_tanh]_backward: (dy, x) -> dx     all of one float32 shape
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
inline constexpr std::string_view kAtenGeluTanhTarget = "vtrn.aten_gelu_tanh";
inline constexpr std::string_view kAtenGeluTanhBackwardTarget = "vtrn.aten_gelu_tanh_backward";

/// Whether |op| calls one of the four kernels.
bool is_aten_gelu(const hlo::Op& op);
/// The elements of the call's result; throws hlo::Error naming what is wrong when its operands
/// and result are not the form above.
std::int64_t aten_gelu_elements(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
