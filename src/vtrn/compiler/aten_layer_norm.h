// `custom_call @vtrn.aten_layer_norm`: torch's native_layer_norm over float32 rows as ATen's CPU
// kernel computes it (layer_norm_kernel.cpp with moments_utils.h's RowwiseMoments), so the
// output, mean and rstd are the CPU's bits: a sum-then-divide mean and a two-pass variance round
// differently from its Welford cascade.
//
//   (x [rows, n], gamma [n]?, beta [n]?) -> (y [rows, n], mean [rows], rstd [rows])
//
// every type float32; backend_config "eps=<float>;gamma=0|1;beta=0|1" says which of gamma and
// beta follow x. Per row (runtime/aten_layer_norm.h has the order): the mean and the population
// variance by ATen's vectorized Welford, rstd = 1 / sqrt(var + eps), and
// y = fma((x - mean) * rstd, gamma, beta) (beta 0 where absent; without gamma,
// fma(x - mean, rstd, beta), or (x - mean) * rstd).
//
// The compiler prices a call as Vector-engine work over x (the moments' and the output's
// passes); the executor runs it row by row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenLayerNormTarget = "vtrn.aten_layer_norm";

struct AtenLayerNormConfig {
  float eps = 1e-5f;
  bool gamma = false;
  bool beta = false;
};

std::string aten_layer_norm_config(const AtenLayerNormConfig& config);
/// nullopt when |text| is not one aten_layer_norm_config() writes.
std::optional<AtenLayerNormConfig> parse_aten_layer_norm_config(std::string_view text);

struct AtenLayerNormShape {
  AtenLayerNormConfig config;
  std::int64_t rows = 0, n = 0;
};
/// Whether |op| is a call of the kernel.
bool is_aten_layer_norm(const hlo::Op& op);
/// The call's config and row shape; throws hlo::Error naming what is wrong when its
/// backend_config, operands or results do not fit the form above.
AtenLayerNormShape aten_layer_norm_shape(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
