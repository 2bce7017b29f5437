#include "vtrn/compiler/aten_group_norm.h"

#include <cstdio>

#include "vtrn/compiler/backend_config.h"

namespace vtrn::compiler {
namespace {

constexpr std::string_view kGroups = "groups=", kEps = ";eps=", kWeight = ";weight=",
                           kBias = ";bias=";

}  // namespace

std::string aten_group_norm_config(const AtenGroupNormConfig& c, bool backward) {
  std::string text = std::string(kGroups) + std::to_string(c.groups);
  if (!backward) {
    char eps[40];
    std::snprintf(eps, sizeof eps, "%.17g", c.eps);
    text += std::string(kEps) + eps;
  }
  text += std::string(kWeight) + (c.weight ? "1" : "0");
  if (!backward) text += std::string(kBias) + (c.bias ? "1" : "0");
  return text;
}

std::optional<AtenGroupNormConfig> parse_aten_group_norm_config(std::string_view text,
                                                                bool backward) {
  AtenGroupNormConfig c;
  const std::optional<double> groups = take_number(text, kGroups);
  if (!groups || *groups < 1 || *groups != static_cast<double>(static_cast<std::int64_t>(*groups)))
    return std::nullopt;
  c.groups = static_cast<std::int64_t>(*groups);
  if (!backward) {
    const std::optional<double> eps = take_number(text, kEps);
    if (!eps) return std::nullopt;
    c.eps = *eps;
  }
  const std::optional<bool> weight = take_flag(text, kWeight);
  if (!weight) return std::nullopt;
  c.weight = *weight;
  if (!backward) {
    const std::optional<bool> bias = take_flag(text, kBias);
    if (!bias) return std::nullopt;
    c.bias = *bias;
  }
  if (!text.empty()) return std::nullopt;
  return c;
}

bool is_aten_group_norm(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall &&
         (op.call_target_name == kAtenGroupNormTarget ||
          op.call_target_name == kAtenGroupNormBackwardTarget);
}

AtenGroupNormShape aten_group_norm_shape(const hlo::Block& b, const hlo::Op& op) {
  const bool backward = op.call_target_name == kAtenGroupNormBackwardTarget;
  const std::string what = "custom_call @" + op.call_target_name;
  const std::optional<AtenGroupNormConfig> config =
      parse_aten_group_norm_config(op.backend_config, backward);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected \"" + aten_group_norm_config(AtenGroupNormConfig{}, backward) +
                     "\" with a group count of 1 or more and 0|1 flags");
  const AtenGroupNormConfig& c = *config;
  AtenGroupNormShape s{c, backward};
  // Operands: x (dy, x, mean, rstd backward), then the weight and bias where flagged.
  const std::size_t tensors = backward ? 4 : 1;
  const std::size_t operands = tensors + (c.weight ? 1 : 0) + (!backward && c.bias ? 1 : 0);
  bool ok = op.operands.size() == operands && op.results.size() == 3;
  if (ok) {
    const hlo::TensorType& x = b.type(op.operands[backward ? 1 : 0]);
    ok = x.rank() >= 2 && x.dtype == hlo::DType::kF32 && b.type(op.results[0]) == x &&
         (!backward || b.type(op.operands[0]) == x);
    s.batch = ok ? x.dims[0] : 0;
    s.channels = ok ? x.dims[1] : 0;
    s.per_channel = 1;
    for (std::size_t i = 2; ok && i < x.dims.size(); ++i) s.per_channel *= x.dims[i];
    ok = ok && s.channels % c.groups == 0;
    const hlo::TensorType vector(hlo::DType::kF32, {s.channels});
    const hlo::TensorType stats(hlo::DType::kF32, {s.batch, c.groups});
    for (std::size_t i = tensors; ok && i < op.operands.size(); ++i)
      ok = b.type(op.operands[i]) == vector;
    if (backward)
      ok = ok && b.type(op.operands[2]) == stats && b.type(op.operands[3]) == stats &&
           b.type(op.results[1]) == vector && b.type(op.results[2]) == vector;
    else
      ok = ok && b.type(op.results[1]) == stats && b.type(op.results[2]) == stats;
  }
  if (!ok)
    throw hlo::Error(what + " needs float32 " +
                     (backward ? "dy and x [N, C, *], mean and rstd [N, G], weight [C] where "
                                 "weight=1, and results dx [N, C, *], dweight and dbias [C]"
                               : "x [N, C, *], weight and bias [C] where flagged, and results y "
                                 "[N, C, *], mean and rstd [N, G]") +
                     ", C a multiple of G; got " + call_types(b, op));
  return s;
}

}  // namespace vtrn::compiler
