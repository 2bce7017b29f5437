// `custom_call @vtrn.aten_addmm`: torch.addmm of float32 as ATen's CPU kernel computes it, one
// BLAS sgemm onto the bias (addmm_impl_cpu_: the result first holds `self` expanded, then
// sgemm adds alpha * mat1 @ mat2 to beta times it). A product and an add after it round
// otherwise: sgemm folds the bias into its first block of partial sums.
//
//   beta != 0: (c [m, n], lhs, rhs, alpha []) -> [m, n]     c is `self` broadcast
//   beta == 0: (lhs, rhs, alpha [])           -> [m, n]     self is not read (NaN in it too)
// lhs is [m, k] or, stored transposed, [k, m]; rhs is [k, n] or [n, k] (a weight's .t() is
// read where it lies, as ATen passes it to sgemm with a transpose flag). Every type float32.
// backend_config: "beta=<value>;lhs_transposed=0|1;rhs_transposed=0|1".
//
// The compiler prices a call as the Tensor-engine matmul it is; the executor runs it through
// ATen's sgemm call (runtime/aten_matmul.h) where the torch layer installed one, else BLAS.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenAddmmTarget = "vtrn.aten_addmm";

struct AtenAddmmConfig {
  double beta = 1;
  bool lhs_transposed = false;
  bool rhs_transposed = false;
};

std::string aten_addmm_config(const AtenAddmmConfig& config);
/// nullopt when |text| is not one aten_addmm_config() writes.
std::optional<AtenAddmmConfig> parse_aten_addmm_config(std::string_view text);

struct AtenAddmmShape {
  AtenAddmmConfig config;
  std::int64_t m = 0, n = 0, k = 0;
};
/// Whether |op| is a call of the kernel.
bool is_aten_addmm(const hlo::Op& op);
/// The call's config and product shape; throws hlo::Error naming what is wrong when its
/// backend_config, operands or result do not fit the form above.
AtenAddmmShape aten_addmm_shape(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
