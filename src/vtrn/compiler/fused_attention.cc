#include "vtrn/compiler/fused_attention.h"

#include <cstdio>
#include <cstdlib>

namespace vtrn::compiler {

std::string flash_attention_config(const FlashAttentionConfig& config) {
  char scale[40];
  std::snprintf(scale, sizeof scale, "%.17g", config.scale);
  return std::string("causal=") + (config.causal ? "1" : "0") + ";scale=" + scale;
}

std::optional<FlashAttentionConfig> parse_flash_attention_config(std::string_view text) {
  constexpr std::string_view kCausal = "causal=", kScale = ";scale=";
  if (text.substr(0, kCausal.size()) != kCausal || text.size() < kCausal.size() + 1)
    return std::nullopt;
  const char c = text[kCausal.size()];
  if (c != '0' && c != '1') return std::nullopt;
  std::string_view rest = text.substr(kCausal.size() + 1);
  if (rest.substr(0, kScale.size()) != kScale) return std::nullopt;
  const std::string number(rest.substr(kScale.size()));
  if (number.empty()) return std::nullopt;
  char* end = nullptr;
  const double scale = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size()) return std::nullopt;
  return FlashAttentionConfig{c == '1', scale};
}

bool is_flash_attention(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall &&
         (op.call_target_name == kFlashAttentionTarget ||
          op.call_target_name == kFlashAttentionBackwardTarget);
}

cost::AttentionShape flash_attention_shape(const hlo::Block& b, const hlo::Op& op) {
  const bool backward = op.call_target_name == kFlashAttentionBackwardTarget;
  const std::string what = "custom_call @" + op.call_target_name;
  const std::size_t first = backward ? 1 : 0;  // the query's operand
  if (op.operands.size() != (backward ? 6u : 3u))
    throw hlo::Error(what + " takes " + (backward ? "6" : "3") + " operands, got " +
                     std::to_string(op.operands.size()));
  const std::optional<FlashAttentionConfig> config =
      parse_flash_attention_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config + "\"");
  const hlo::TensorType& q = b.type(op.operands[first]);
  const hlo::TensorType& k = b.type(op.operands[first + 1]);
  const hlo::TensorType& v = b.type(op.operands[first + 2]);
  if (q.dims.size() != 4 || k.dims != v.dims || k.dims.size() != 4 || q.dims[0] != k.dims[0] ||
      q.dims[3] != k.dims[3] || k.dims[1] <= 0 || q.dims[1] % k.dims[1] != 0 ||
      q.dtype != k.dtype || q.dtype != v.dtype || !hlo::is_float(q.dtype))
    throw hlo::Error(what +
                     " needs query [B, H, L, D] and key, value [B, Hk, S, D] of one float "
                     "dtype with Hk dividing H; got " +
                     q.str() + ", " + k.str() + ", " + v.str());
  cost::AttentionShape a;
  a.batch = q.dims[0];
  a.heads = q.dims[1];
  a.kv_heads = k.dims[1];
  a.q_len = q.dims[2];
  a.kv_len = k.dims[2];
  a.head_dim = q.dims[3];
  a.causal = config->causal;
  a.element_bytes = hlo::dtype_size(q.dtype);
  a.dtype = q.dtype == hlo::DType::kBF16  ? hw::TensorEngineDType::kBF16
            : q.dtype == hlo::DType::kF16 ? hw::TensorEngineDType::kFP16
                                          : hw::TensorEngineDType::kFP32;
  return a;
}

}  // namespace vtrn::compiler
