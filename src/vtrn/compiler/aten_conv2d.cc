#include "vtrn/compiler/aten_conv2d.h"

#include <charconv>
#include <system_error>
#include <vector>

#include "vtrn/compiler/backend_config.h"
#include "vtrn/compiler/ops_cost.h"

namespace vtrn::compiler {
namespace {

// "<key><a>,<b>" at the front of |text|, dropped; nullopt when it does not start so.
std::optional<std::array<std::int64_t, 2>> take_pair(std::string_view& text, std::string_view key) {
  if (text.substr(0, key.size()) != key) return std::nullopt;
  std::string_view rest = text.substr(key.size());
  std::array<std::int64_t, 2> v{};
  for (int i = 0; i < 2; ++i) {
    if (i == 1) {
      if (rest.empty() || rest[0] != ',') return std::nullopt;
      rest.remove_prefix(1);
    }
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), v[i]);
    if (error != std::errc() || end == rest.data()) return std::nullopt;
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  }
  text = rest;
  return v;
}

std::string pair(const std::array<std::int64_t, 2>& v) {
  return std::to_string(v[0]) + "," + std::to_string(v[1]);
}

}  // namespace

std::string aten_conv2d_config(const AtenConv2dConfig& c) {
  return "stride=" + pair(c.stride) + ";padding=" + pair(c.padding) +
         ";dilation=" + pair(c.dilation) + ";groups=" + std::to_string(c.groups) +
         ";bias=" + (c.bias ? "1" : "0");
}

std::optional<AtenConv2dConfig> parse_aten_conv2d_config(std::string_view text) {
  AtenConv2dConfig c;
  const auto stride = take_pair(text, "stride=");
  const auto padding = stride ? take_pair(text, ";padding=") : std::nullopt;
  const auto dilation = padding ? take_pair(text, ";dilation=") : std::nullopt;
  if (!dilation || text.substr(0, 8) != ";groups=") return std::nullopt;
  text.remove_prefix(8);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), c.groups);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  const std::optional<bool> bias = take_flag(text, ";bias=");
  if (!bias || !text.empty()) return std::nullopt;
  c.stride = *stride, c.padding = *padding, c.dilation = *dilation, c.bias = *bias;
  for (int i = 0; i < 2; ++i)
    if (c.stride[i] < 1 || c.dilation[i] < 1 || c.padding[i] < 0) return std::nullopt;
  if (c.groups < 1) return std::nullopt;
  return c;
}

std::array<std::int64_t, 2> aten_conv2d_output_size(const AtenConv2dConfig& c,
                                                    const hlo::TensorType& x,
                                                    const hlo::TensorType& w) {
  std::array<std::int64_t, 2> out{};
  for (int i = 0; i < 2; ++i) {
    const std::int64_t span =
        x.dims[2 + i] + 2 * c.padding[i] - c.dilation[i] * (w.dims[2 + i] - 1) - 1;
    out[i] = span < 0 ? 0 : span / c.stride[i] + 1;
  }
  return out;
}

bool is_aten_conv2d(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && op.call_target_name == kAtenConv2dTarget;
}

AtenConv2dConfig aten_conv2d_checked(const hlo::Block& b, const hlo::Op& op) {
  const std::string what = "custom_call @" + std::string(kAtenConv2dTarget);
  const std::optional<AtenConv2dConfig> config = parse_aten_conv2d_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected \"stride=<sh>,<sw>;padding=<ph>,<pw>;dilation=<dh>,<dw>;"
                     "groups=<g>;bias=0|1\" with strides, dilations and groups of at least 1");
  bool ok = op.operands.size() == (config->bias ? 3u : 2u) && op.results.size() == 1;
  if (ok) {
    const hlo::TensorType& x = b.type(op.operands[0]);
    const hlo::TensorType& w = b.type(op.operands[1]);
    ok = x.dtype == hlo::DType::kF32 && w.dtype == hlo::DType::kF32 && x.rank() == 4 &&
         w.rank() == 4 && w.dims[0] % config->groups == 0 &&
         x.dims[1] == w.dims[1] * config->groups;
    if (ok && config->bias)
      ok = b.type(op.operands[2]) == hlo::TensorType(hlo::DType::kF32, {w.dims[0]});
    if (ok) {
      const auto out = aten_conv2d_output_size(*config, x, w);
      ok = b.type(op.results[0]) ==
           hlo::TensorType(hlo::DType::kF32, {x.dims[0], w.dims[0], out[0], out[1]});
    }
  }
  if (!ok)
    throw hlo::Error(what + " with " + op.backend_config +
                     " needs float32 x [N, C, H, W], w [O, C / groups, KH, KW] with groups "
                     "dividing O, b [O] where bias=1, and gives y [N, O, OH, OW]; got " +
                     call_types(b, op));
  return *config;
}

hlo::Value aten_conv2d_ops(hlo::Builder& b, hlo::Value x, hlo::Value w,
                           std::optional<hlo::Value> bias, const AtenConv2dConfig& c) {
  hlo::ConvAttrs a;
  a.window_strides = {c.stride[0], c.stride[1]};
  a.padding_low = a.padding_high = {c.padding[0], c.padding[1]};
  a.lhs_dilation = {1, 1};
  a.rhs_dilation = {c.dilation[0], c.dilation[1]};
  a.dims = hlo::ConvDimensionNumbers::channels_first(2);
  a.feature_group_count = c.groups;
  hlo::Value y = b.convolution(x, w, a);
  if (bias) y = b.add(y, b.broadcast_in_dim(*bias, b.type(y).dims, {1}));
  return y;
}

cost::KernelCost aten_conv2d_cost(const hlo::Block& block, const hlo::Op& op,
                                  const cost::CostModel& model) {
  const AtenConv2dConfig c = aten_conv2d_checked(block, op);
  hlo::Builder b("aten_conv2d");
  const hlo::Value x = b.param(block.type(op.operands[0])), w = b.param(block.type(op.operands[1]));
  std::optional<hlo::Value> bias;
  if (c.bias) bias = b.param(block.type(op.operands[2]));
  return cost_as_ops(b.finish({aten_conv2d_ops(b, x, w, bias, c)}), model);
}

std::string aten_conv2d_backward_config(const AtenConv2dBackwardConfig& config) {
  std::string text = aten_conv2d_config(config.forward) + ";grads=";
  for (bool g : config.grads) text += g ? "1" : "0";
  return text;
}

std::optional<AtenConv2dBackwardConfig> parse_aten_conv2d_backward_config(std::string_view text) {
  constexpr std::string_view kGrads = ";grads=";
  const std::size_t at = text.rfind(kGrads);
  if (at == std::string_view::npos || text.size() != at + kGrads.size() + 3) return std::nullopt;
  AtenConv2dBackwardConfig c;
  const std::optional<AtenConv2dConfig> forward = parse_aten_conv2d_config(text.substr(0, at));
  if (!forward) return std::nullopt;
  c.forward = *forward;
  for (int i = 0; i < 3; ++i) {
    const char g = text[at + kGrads.size() + static_cast<std::size_t>(i)];
    if (g != '0' && g != '1') return std::nullopt;
    c.grads[static_cast<std::size_t>(i)] = g == '1';
  }
  return c;
}

bool is_aten_conv2d_backward(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && op.call_target_name == kAtenConv2dBackwardTarget;
}

AtenConv2dBackwardConfig aten_conv2d_backward_checked(const hlo::Block& b, const hlo::Op& op) {
  const std::string what = "custom_call @" + std::string(kAtenConv2dBackwardTarget);
  const std::optional<AtenConv2dBackwardConfig> config =
      parse_aten_conv2d_backward_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config +
                     "\"; expected the forward's, then \";grads=<0|1><0|1><0|1>\"");
  bool ok = op.operands.size() == 3 && op.results.size() == 3;
  if (ok) {
    const hlo::TensorType& dy = b.type(op.operands[0]);
    const hlo::TensorType& x = b.type(op.operands[1]);
    const hlo::TensorType& w = b.type(op.operands[2]);
    const AtenConv2dConfig& f = config->forward;
    ok = x.dtype == hlo::DType::kF32 && w.dtype == hlo::DType::kF32 && x.rank() == 4 &&
         w.rank() == 4 && w.dims[0] % f.groups == 0 && x.dims[1] == w.dims[1] * f.groups;
    if (ok) {
      const auto out = aten_conv2d_output_size(f, x, w);
      ok = dy == hlo::TensorType(hlo::DType::kF32, {x.dims[0], w.dims[0], out[0], out[1]}) &&
           b.type(op.results[0]) == x && b.type(op.results[1]) == w &&
           b.type(op.results[2]) == hlo::TensorType(hlo::DType::kF32, {w.dims[0]});
    }
  }
  if (!ok)
    throw hlo::Error(what + " with " + op.backend_config +
                     " needs float32 dy [N, O, OH, OW], x [N, C, H, W] and w [O, C / groups, KH, "
                     "KW] of the forward's shapes, and gives dx, dw and db [O]; got " +
                     call_types(b, op));
  return *config;
}

cost::KernelCost aten_conv2d_backward_cost(const hlo::Block& block, const hlo::Op& op,
                                           const cost::CostModel& model) {
  const AtenConv2dBackwardConfig c = aten_conv2d_backward_checked(block, op);
  hlo::Builder b("aten_conv2d_backward");
  const hlo::Value dy = b.param(block.type(op.operands[0]));
  const hlo::Value x = b.param(block.type(op.operands[1])), w = b.param(block.type(op.operands[2]));
  std::vector<hlo::Value> results;
  AtenConv2dConfig forward = c.forward;
  forward.bias = false;
  for (int i = 0; i < 2; ++i)
    if (c.grads[static_cast<std::size_t>(i)])
      results.push_back(aten_conv2d_ops(b, x, w, std::nullopt, forward));
  if (c.grads[2])
    results.push_back(
        b.reduce(dy, b.scalar(hlo::DType::kF32, 0), {0, 2, 3}, hlo::ReduceKind::kAdd));
  if (results.empty()) return {};
  return cost_as_ops(b.finish(results), model);
}

}  // namespace vtrn::compiler
