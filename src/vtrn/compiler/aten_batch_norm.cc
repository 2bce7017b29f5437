#include "vtrn/compiler/aten_batch_norm.h"

#include <cstdio>
#include <vector>

#include "vtrn/compiler/backend_config.h"

namespace vtrn::compiler {
namespace {

constexpr std::string_view kTraining = "training=", kMomentum = ";momentum=", kEps = ";eps=",
                           kWeight = ";weight=", kBias = ";bias=", kRunning = ";running=";

std::string number(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

const char* flag(bool v) { return v ? "1" : "0"; }

}  // namespace

std::string aten_batch_norm_config(const AtenBatchNormConfig& c, bool backward) {
  std::string text = std::string(kTraining) + flag(c.training);
  if (!backward) text += std::string(kMomentum) + number(c.momentum);
  text += std::string(kEps) + number(c.eps) + std::string(kWeight) + flag(c.weight);
  if (!backward)
    text += std::string(kBias) + flag(c.bias) + std::string(kRunning) + flag(c.running);
  return text;
}

std::optional<AtenBatchNormConfig> parse_aten_batch_norm_config(std::string_view text,
                                                                bool backward) {
  AtenBatchNormConfig c;
  const std::optional<bool> training = take_flag(text, kTraining);
  if (!training) return std::nullopt;
  c.training = *training;
  if (!backward) {
    const std::optional<double> momentum = take_number(text, kMomentum);
    if (!momentum) return std::nullopt;
    c.momentum = *momentum;
  }
  const std::optional<double> eps = take_number(text, kEps);
  const std::optional<bool> weight = eps ? take_flag(text, kWeight) : std::nullopt;
  if (!weight) return std::nullopt;
  c.eps = *eps;
  c.weight = *weight;
  if (!backward) {
    const std::optional<bool> bias = take_flag(text, kBias);
    const std::optional<bool> running = bias ? take_flag(text, kRunning) : std::nullopt;
    if (!running) return std::nullopt;
    c.bias = *bias;
    c.running = *running;
  }
  if (!text.empty()) return std::nullopt;
  return c;
}

bool is_aten_batch_norm(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall &&
         (op.call_target_name == kAtenBatchNormTarget ||
          op.call_target_name == kAtenBatchNormBackwardTarget);
}

AtenBatchNormShape aten_batch_norm_shape(const hlo::Block& b, const hlo::Op& op) {
  const bool backward = op.call_target_name == kAtenBatchNormBackwardTarget;
  const std::string what = "custom_call @" + op.call_target_name;
  const std::optional<AtenBatchNormConfig> config =
      parse_aten_batch_norm_config(op.backend_config, backward);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected \"" + aten_batch_norm_config(AtenBatchNormConfig{}, backward) +
                     "\" with 0|1 flags");
  const AtenBatchNormConfig& c = *config;
  std::size_t vectors = 0, results = 3;  // the [C] operands and the results
  if (backward) {
    vectors = (c.weight ? 1 : 0) + 2;
  } else {
    vectors = (c.weight ? 1 : 0) + (c.bias ? 1 : 0) + (c.running ? 2 : 0);
    results = c.running ? 5 : 3;
  }
  const std::size_t tensors = backward ? 2 : 1;
  AtenBatchNormShape s{c, backward};
  bool ok = (backward || c.training || c.running) && op.operands.size() == tensors + vectors &&
            op.results.size() == results;
  if (ok) {
    const hlo::TensorType& x = b.type(op.operands[0]);
    ok = x.rank() >= 2 && x.dtype == hlo::DType::kF32 && b.type(op.operands[tensors - 1]) == x &&
         b.type(op.results[0]) == x;
    s.batch = ok ? x.dims[0] : 0;
    s.channels = ok ? x.dims[1] : 0;
    s.per_channel = 1;
    for (std::size_t i = 2; ok && i < x.dims.size(); ++i) s.per_channel *= x.dims[i];
    const hlo::TensorType vector(hlo::DType::kF32, {s.channels});
    for (std::size_t i = tensors; ok && i < op.operands.size(); ++i)
      ok = b.type(op.operands[i]) == vector;
    for (std::size_t i = 1; ok && i < op.results.size(); ++i) ok = b.type(op.results[i]) == vector;
  }
  if (!ok)
    throw hlo::Error(
        what + " needs float32 " +
        (backward ? "dy and x [N, C, *], weight [C] where weight=1, the two statistics [C], and "
                    "results dx [N, C, *], dweight and dbias [C]"
                  : "x [N, C, *], weight, bias, running_mean and running_var [C] where flagged "
                    "(evaluation needs the running ones), and results y [N, C, *], mean and "
                    "invstd [C] and the new running ones [C] where running=1") +
        "; got " + call_types(b, op));
  return s;
}

}  // namespace vtrn::compiler
