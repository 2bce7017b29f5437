// `custom_call @vtrn.aten_norm`: torch.linalg.vector_norm of order 1 or 2 over float32 or
// bfloat16 (the result in the input's type), each row summed in the order ATen's CPU norm
// kernel (ReduceOpsKernel.cpp's norm_kernel_tensor_iterator_impl) takes it. An add tree sums
// more accurately but rounds otherwise, and clip_grad_norm_ divides every gradient by the result.
//
//   (x [rows, n]) -> [rows]       x float32 or bfloat16; the result of the same type
//
// backend_config "ord=1|2;vectorized=0|1":
//   vectorized=1 (order 2 only): ATen's last-dim fast path, taken where the reduced dims are
//     the trailing ones of a contiguous tensor: vectors of 8 float lanes each accumulating
//     x * x (the product rounded, then the add), the lanes added in order; then the tail, in
//     groups of 4 added as rounded products and the last n % 4 as fused multiply-adds, as the
//     compiled loop of torch 2.13's x86 wheels takes it; then the square root. bfloat16 rows
//     go 16 elements at a time, their lower and then upper 8 converted to float.
//   vectorized=0: binary_kernel_reduce's scalar loop, every other layout (the reduced elements
//     of an output in row-major order) and order 1: acc + x * x (rounded product) or acc + |x|
//     in order, then the square root for order 2.
// Accumulation is in float32 and the result is rounded to the output type once.
//
// The compiler prices a call as a Vector-engine pass over x; the executor runs it row by row
// (runtime/aten_norm.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenNormTarget = "vtrn.aten_norm";

struct AtenNormConfig {
  int ord = 2;              ///< 1 or 2
  bool vectorized = false;  ///< ATen's last-dim fast path (order 2)
};

std::string aten_norm_config(const AtenNormConfig& config);
/// nullopt when |text| is not one aten_norm_config() writes or names an order other than 1
/// and 2, or the fast path with order 1.
std::optional<AtenNormConfig> parse_aten_norm_config(std::string_view text);

struct AtenNormShape {
  AtenNormConfig config;
  std::int64_t rows = 0, n = 0;
  hlo::DType dtype = hlo::DType::kF32;
};
/// Whether |op| is a call of the kernel.
bool is_aten_norm(const hlo::Op& op);
/// The call's config and row shape; throws hlo::Error naming what is wrong when its
/// backend_config, operands or result do not fit the form above.
AtenNormShape aten_norm_shape(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
