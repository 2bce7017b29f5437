// The fused attention kernels a module calls: `custom_call @vtrn.flash_attention` and
// `@vtrn.flash_attention_backward`, what TorchNeuron's scaled_dot_product_attention runs on
// trn2 (the NKI flash attention forward and backward) when its shapes allow.
//
//   forward:  (query [B, H, L, D], key [B, Hk, S, D], value [B, Hk, S, D])
//             -> (output [B, H, L, D] of the query's dtype, logsumexp [B, H, L] float32)
//   backward: (grad_output, query, key, value, output, logsumexp)
//             -> (grad_query, grad_key, grad_value), each of its operand's type
// Hk divides H (grouped-query attention: query head h reads key/value head h / (H / Hk)).
// backend_config: "causal=0|1;scale=<softmax scale>". The causal mask is top-left aligned
// (key j is visible to query i when j <= i), as PyTorch's is_causal.
//
// The compiler prices a call as one kernel from cost/attention_cost.h; the executor runs it on
// the host (runtime/kernels_attention.cc).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "vtrn/cost/attention_cost.h"
#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kFlashAttentionTarget = "vtrn.flash_attention";
inline constexpr std::string_view kFlashAttentionBackwardTarget = "vtrn.flash_attention_backward";

struct FlashAttentionConfig {
  bool causal = false;
  double scale = 1;
};

std::string flash_attention_config(const FlashAttentionConfig& config);
/// nullopt when |text| is not one flash_attention_config() writes.
std::optional<FlashAttentionConfig> parse_flash_attention_config(std::string_view text);

/// Whether |op| calls one of the two kernels.
bool is_flash_attention(const hlo::Op& op);
/// The attention shape of a call of either kernel (the query, key and value types and the
/// config). Throws hlo::Error for operands that are not the kernel's.
cost::AttentionShape flash_attention_shape(const hlo::Block& block, const hlo::Op& op);

}  // namespace vtrn::compiler
