#include "vtrn/compiler/aten_nll_loss.h"

#include <charconv>
#include <system_error>

#include "vtrn/compiler/backend_config.h"

namespace vtrn::compiler {
namespace {

constexpr std::string_view kIgnoreIndex = "ignore_index=", kMean = ";mean=";

}  // namespace

std::string aten_nll_loss_config(const AtenNllLossConfig& config) {
  return std::string(kIgnoreIndex) + std::to_string(config.ignore_index) + std::string(kMean) +
         (config.mean ? "1" : "0");
}

std::optional<AtenNllLossConfig> parse_aten_nll_loss_config(std::string_view text) {
  if (text.substr(0, kIgnoreIndex.size()) != kIgnoreIndex) return std::nullopt;
  text.remove_prefix(kIgnoreIndex.size());
  AtenNllLossConfig c;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), c.ignore_index);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  const std::optional<bool> mean = take_flag(text, kMean);
  if (!mean || !text.empty()) return std::nullopt;
  c.mean = *mean;
  return c;
}

bool is_aten_nll_loss(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && op.call_target_name == kAtenNllLossTarget;
}

AtenNllLossShape aten_nll_loss_shape(const hlo::Block& b, const hlo::Op& op) {
  const std::string what = "custom_call @" + std::string(kAtenNllLossTarget);
  const std::optional<AtenNllLossConfig> config = parse_aten_nll_loss_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected \"ignore_index=<integer>;mean=0|1\"");
  const auto n = op.operands.size();
  bool fits = (n == 2 || n == 3) && op.results.size() == 2;
  if (fits) {
    const hlo::TensorType& x = b.type(op.operands[0]);
    const hlo::TensorType& target = b.type(op.operands[1]);
    fits = (x.dtype == hlo::DType::kF32 || x.dtype == hlo::DType::kBF16) && x.rank() == 2 &&
           target.dtype == hlo::DType::kI64 && target.rank() == 1 && target.dims[0] == x.dims[0];
    if (fits && n == 3) {
      const hlo::TensorType& w = b.type(op.operands[2]);
      fits = w.dtype == x.dtype && w.rank() == 1 && w.dims[0] == x.dims[1];
    }
    for (int r : op.results) fits = fits && b.type(r) == hlo::TensorType(x.dtype, {});
  }
  if (!fits)
    throw hlo::Error(what +
                     " takes (x [N, C] of float32 or bfloat16, target [N] int64[, weight "
                     "[C] of x's type]) to two scalars of x's type, got " +
                     call_types(b, op));
  AtenNllLossShape s;
  s.config = *config;
  s.samples = b.type(op.operands[0]).dims[0];
  s.classes = b.type(op.operands[0]).dims[1];
  s.dtype = b.type(op.operands[0]).dtype;
  s.weighted = n == 3;
  return s;
}

}  // namespace vtrn::compiler
