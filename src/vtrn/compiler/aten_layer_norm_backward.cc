#include "vtrn/compiler/aten_layer_norm_backward.h"

#include <vector>

#include "vtrn/compiler/backend_config.h"

namespace vtrn::compiler {
namespace {

constexpr std::string_view kGamma = "gamma=", kBeta = ";beta=";

}  // namespace

std::string aten_layer_norm_backward_config(const AtenLayerNormBackwardConfig& config) {
  return std::string(kGamma) + (config.gamma ? "1" : "0") + std::string(kBeta) +
         (config.beta ? "1" : "0");
}

std::optional<AtenLayerNormBackwardConfig> parse_aten_layer_norm_backward_config(
    std::string_view text) {
  const std::optional<bool> gamma = take_flag(text, kGamma);
  if (!gamma) return std::nullopt;
  const std::optional<bool> beta = take_flag(text, kBeta);
  if (!beta || !text.empty()) return std::nullopt;
  return AtenLayerNormBackwardConfig{*gamma, *beta};
}

bool is_aten_layer_norm_backward(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && op.call_target_name == kAtenLayerNormBackwardTarget;
}

AtenLayerNormBackwardShape aten_layer_norm_backward_shape(const hlo::Block& b, const hlo::Op& op) {
  const std::string what = "custom_call @" + std::string(kAtenLayerNormBackwardTarget);
  const std::optional<AtenLayerNormBackwardConfig> config =
      parse_aten_layer_norm_backward_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected \"gamma=0|1;beta=0|1\"");
  const std::size_t operands = config->gamma ? 5 : 4;
  bool ok = op.operands.size() == operands && op.results.size() == 3;
  std::int64_t rows = 0, n = 0;
  if (ok) {
    const hlo::TensorType& dy = b.type(op.operands[0]);
    ok = dy.rank() == 2 && dy.dtype == hlo::DType::kF32 && b.type(op.operands[1]) == dy;
    rows = ok ? dy.dims[0] : 0, n = ok ? dy.dims[1] : 0;
    const hlo::TensorType row_stat(hlo::DType::kF32, {rows}), column(hlo::DType::kF32, {n});
    ok = ok && b.type(op.operands[2]) == row_stat && b.type(op.operands[3]) == row_stat &&
         (!config->gamma || b.type(op.operands[4]) == column) && b.type(op.results[0]) == dy &&
         b.type(op.results[1]) == column && b.type(op.results[2]) == column;
  }
  if (!ok)
    throw hlo::Error(what +
                     " needs float32 dy and x [rows, n], mean and rstd [rows], gamma [n] where "
                     "gamma=1, and results dx [rows, n], dgamma and dbeta [n]; got " +
                     call_types(b, op));
  return {*config, rows, n};
}

}  // namespace vtrn::compiler
