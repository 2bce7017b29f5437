#include "vtrn/compiler/aten_softmax.h"

#include "vtrn/compiler/backend_config.h"

namespace vtrn::compiler {
namespace {

constexpr std::string_view kLog = "log=", kBackward = ";backward=";

}  // namespace

std::string aten_softmax_config(const AtenSoftmaxConfig& c) {
  return std::string(kLog) + (c.log ? "1" : "0") + std::string(kBackward) +
         (c.backward ? "1" : "0");
}

std::optional<AtenSoftmaxConfig> parse_aten_softmax_config(std::string_view text) {
  const std::optional<bool> log = take_flag(text, kLog);
  const std::optional<bool> backward = log ? take_flag(text, kBackward) : std::nullopt;
  if (!backward || !text.empty()) return std::nullopt;
  return AtenSoftmaxConfig{*log, *backward};
}

bool is_aten_softmax(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && op.call_target_name == kAtenSoftmaxTarget;
}

AtenSoftmaxShape aten_softmax_shape(const hlo::Block& b, const hlo::Op& op) {
  const std::string what = "custom_call @" + std::string(kAtenSoftmaxTarget);
  const std::optional<AtenSoftmaxConfig> config = parse_aten_softmax_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected \"log=0|1;backward=0|1\"");
  bool ok = op.operands.size() == (config->backward ? 2u : 1u) && op.results.size() == 1;
  AtenSoftmaxShape s{*config};
  if (ok) {
    const hlo::TensorType& y = b.type(op.results[0]);
    ok = y.rank() == 2 && y.dtype == hlo::DType::kF32;
    for (int v : op.operands) ok = ok && b.type(v) == y;
    s.rows = ok ? y.dims[0] : 0;
    s.n = ok ? y.dims[1] : 0;
  }
  if (!ok)
    throw hlo::Error(what + " takes " +
                     (config->backward ? "(grad_output, output)" : std::string("(x)")) +
                     " and gives one result, all float32 [rows, n]; got " + call_types(b, op));
  return s;
}

}  // namespace vtrn::compiler
