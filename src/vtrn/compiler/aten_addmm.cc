#include "vtrn/compiler/aten_addmm.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "vtrn/compiler/backend_config.h"

namespace vtrn::compiler {
namespace {

constexpr std::string_view kBeta = "beta=", kLhs = ";lhs_transposed=", kRhs = ";rhs_transposed=";

}  // namespace

std::string aten_addmm_config(const AtenAddmmConfig& config) {
  char beta[40];
  std::snprintf(beta, sizeof beta, "%.17g", config.beta);
  return std::string(kBeta) + beta + std::string(kLhs) + (config.lhs_transposed ? "1" : "0") +
         std::string(kRhs) + (config.rhs_transposed ? "1" : "0");
}

std::optional<AtenAddmmConfig> parse_aten_addmm_config(std::string_view text) {
  const std::optional<double> beta = take_number(text, kBeta);
  if (!beta) return std::nullopt;
  AtenAddmmConfig c;
  c.beta = *beta;
  const std::optional<bool> lhs = take_flag(text, kLhs);
  if (!lhs) return std::nullopt;
  const std::optional<bool> rhs = take_flag(text, kRhs);
  if (!rhs || !text.empty()) return std::nullopt;
  c.lhs_transposed = *lhs;
  c.rhs_transposed = *rhs;
  return c;
}

bool is_aten_addmm(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && op.call_target_name == kAtenAddmmTarget;
}

AtenAddmmShape aten_addmm_shape(const hlo::Block& b, const hlo::Op& op) {
  const std::string what = "custom_call @" + std::string(kAtenAddmmTarget);
  const std::optional<AtenAddmmConfig> config = parse_aten_addmm_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected \"beta=<value>;lhs_transposed=0|1;rhs_transposed=0|1\"");
  const bool has_c = config->beta != 0.0;
  const std::size_t operands = has_c ? 4 : 3;
  if (op.operands.size() != operands || op.results.size() != 1)
    throw hlo::Error(what + " with beta " + (has_c ? "!= 0" : "0") + " takes " +
                     std::to_string(operands) + " operands and gives 1 result, got " +
                     std::to_string(op.operands.size()) + " and " +
                     std::to_string(op.results.size()));
  const std::size_t first = has_c ? 1 : 0;
  const hlo::TensorType& l = b.type(op.operands[first]);
  const hlo::TensorType& r = b.type(op.operands[first + 1]);
  const hlo::TensorType& alpha = b.type(op.operands[first + 2]);
  const hlo::TensorType& out = b.type(op.results[0]);
  AtenAddmmShape s;
  s.config = *config;
  bool ok = l.rank() == 2 && r.rank() == 2 && alpha.rank() == 0 && out.rank() == 2;
  std::vector<const hlo::TensorType*> all{&l, &r, &alpha, &out};
  if (has_c) all.push_back(&b.type(op.operands[0]));
  for (const hlo::TensorType* t : all) ok = ok && t->dtype == hlo::DType::kF32;
  if (ok) {
    s.m = l.dims[config->lhs_transposed ? 1 : 0];
    s.k = l.dims[config->lhs_transposed ? 0 : 1];
    s.n = r.dims[config->rhs_transposed ? 0 : 1];
    ok = r.dims[config->rhs_transposed ? 1 : 0] == s.k && out.dims[0] == s.m &&
         out.dims[1] == s.n && (!has_c || b.type(op.operands[0]).dims == out.dims);
  }
  if (!ok) {
    std::string got;
    for (int v : op.operands) got += (got.empty() ? "" : ", ") + b.type(v).str();
    throw hlo::Error(what + " needs float32 " + (has_c ? "c [m, n], " : "") + "lhs [m, k] (" +
                     (config->lhs_transposed ? "stored [k, m]" : "as is") + "), rhs [k, n] (" +
                     (config->rhs_transposed ? "stored [n, k]" : "as is") +
                     "), alpha [] and a result [m, n]; got (" + got + ") -> " + out.str());
  }
  return s;
}

}  // namespace vtrn::compiler
