#include "vtrn/compiler/aten_norm.h"

#include <vector>

namespace vtrn::compiler {
namespace {

constexpr std::string_view kOrd = "ord=", kVectorized = ";vectorized=";

}  // namespace

std::string aten_norm_config(const AtenNormConfig& config) {
  return std::string(kOrd) + std::to_string(config.ord) + std::string(kVectorized) +
         (config.vectorized ? "1" : "0");
}

std::optional<AtenNormConfig> parse_aten_norm_config(std::string_view text) {
  for (const AtenNormConfig c :
       {AtenNormConfig{1, false}, AtenNormConfig{2, false}, AtenNormConfig{2, true}})
    if (text == aten_norm_config(c)) return c;
  return std::nullopt;
}

bool is_aten_norm(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && op.call_target_name == kAtenNormTarget;
}

AtenNormShape aten_norm_shape(const hlo::Block& b, const hlo::Op& op) {
  const std::string what = "custom_call @" + std::string(kAtenNormTarget);
  const std::optional<AtenNormConfig> config = parse_aten_norm_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected \"ord=1;vectorized=0\", \"ord=2;vectorized=0\" or "
                     "\"ord=2;vectorized=1\"");
  if (op.operands.size() != 1 || op.results.size() != 1)
    throw hlo::Error(what + " takes 1 operand and gives 1 result, got " +
                     std::to_string(op.operands.size()) + " and " +
                     std::to_string(op.results.size()));
  const hlo::TensorType& x = b.type(op.operands[0]);
  const hlo::TensorType& out = b.type(op.results[0]);
  const bool type_ok =
      (x.dtype == hlo::DType::kF32 || x.dtype == hlo::DType::kBF16) && out.dtype == x.dtype;
  if (!type_ok || x.rank() != 2 || out.rank() != 1 || out.dims[0] != x.dims[0])
    throw hlo::Error(what +
                     " takes x [rows, n] of float32 or bfloat16 to [rows] of the same "
                     "type, got " +
                     x.str() + " -> " + out.str());
  AtenNormShape s;
  s.config = *config;
  s.rows = x.dims[0];
  s.n = x.dims[1];
  s.dtype = x.dtype;
  return s;
}

}  // namespace vtrn::compiler
