#include "vtrn/compiler/aten_layer_norm.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "vtrn/compiler/backend_config.h"

namespace vtrn::compiler {
namespace {

constexpr std::string_view kEps = "eps=", kGamma = ";gamma=", kBeta = ";beta=";

}  // namespace

std::string aten_layer_norm_config(const AtenLayerNormConfig& config) {
  char eps[40];
  std::snprintf(eps, sizeof eps, "%.9g", static_cast<double>(config.eps));
  return std::string(kEps) + eps + std::string(kGamma) + (config.gamma ? "1" : "0") +
         std::string(kBeta) + (config.beta ? "1" : "0");
}

std::optional<AtenLayerNormConfig> parse_aten_layer_norm_config(std::string_view text) {
  const std::optional<double> eps = take_number(text, kEps);
  if (!eps) return std::nullopt;
  AtenLayerNormConfig c;
  c.eps = static_cast<float>(*eps);
  const std::optional<bool> gamma = take_flag(text, kGamma);
  if (!gamma) return std::nullopt;
  const std::optional<bool> beta = take_flag(text, kBeta);
  if (!beta || !text.empty()) return std::nullopt;
  c.gamma = *gamma;
  c.beta = *beta;
  return c;
}

bool is_aten_layer_norm(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && op.call_target_name == kAtenLayerNormTarget;
}

AtenLayerNormShape aten_layer_norm_shape(const hlo::Block& b, const hlo::Op& op) {
  const std::string what = "custom_call @" + std::string(kAtenLayerNormTarget);
  const std::optional<AtenLayerNormConfig> config = parse_aten_layer_norm_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected \"eps=<float>;gamma=0|1;beta=0|1\"");
  const std::size_t operands = 1 + (config->gamma ? 1 : 0) + (config->beta ? 1 : 0);
  if (op.operands.size() != operands || op.results.size() != 3)
    throw hlo::Error(what + " with gamma=" + (config->gamma ? "1" : "0") + " and beta=" +
                     (config->beta ? "1" : "0") + " takes " + std::to_string(operands) +
                     " operands and gives 3 results, got " + std::to_string(op.operands.size()) +
                     " and " + std::to_string(op.results.size()));
  const hlo::TensorType& x = b.type(op.operands[0]);
  bool ok = x.rank() == 2 && x.dtype == hlo::DType::kF32;
  const std::int64_t rows = ok ? x.dims[0] : 0, n = ok ? x.dims[1] : 0;
  for (std::size_t i = 1; i < op.operands.size(); ++i) {
    const hlo::TensorType& p = b.type(op.operands[i]);
    ok = ok && p.dtype == hlo::DType::kF32 && p.dims == std::vector<std::int64_t>{n};
  }
  const hlo::TensorType& y = b.type(op.results[0]);
  ok = ok && y == x;
  for (int r : {1, 2}) {
    const hlo::TensorType& t = b.type(op.results[static_cast<std::size_t>(r)]);
    ok = ok && t.dtype == hlo::DType::kF32 && t.dims == std::vector<std::int64_t>{rows};
  }
  if (!ok)
    throw hlo::Error(what +
                     " needs float32 x [rows, n], gamma and beta [n], and results y "
                     "[rows, n], mean and rstd [rows]; got " +
                     call_types(b, op));
  AtenLayerNormShape s;
  s.config = *config;
  s.rows = rows;
  s.n = n;
  return s;
}

}  // namespace vtrn::compiler
