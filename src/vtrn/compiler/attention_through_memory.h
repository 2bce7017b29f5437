// scaled_dot_product_attention's forward where TorchNeuron's flash kernel does not take the
// shapes: one module whose [query, key] scores and probabilities go through HBM, the
// probabilities saved for the backward (PyTorch's math path saves the same tensor).
//
// attention_through_memory() builds that module's ops. The module calls them as one kernel
// instead, `custom_call @vtrn.attention`:
//
//   (query [B, H, L, D], key [B, Hk, S, D], value [B, Hk, S, D][, bias])
//     -> (output [B, H, L, D], saved [B, H, L, S + c]), both of the query's dtype
//
// the bias (an attention mask) pred or of the query's dtype, broadcastable to [B, H, L, S].
// Each row of |saved| is the row's S probabilities followed by its float32 logsumexp, its bits
// in the c = 4 / sizeof(dtype) elements after them (attention_saved_type()): what the backward
// reads, and the logsumexp lets the host take ATen's flash backward (runtime/aten_attention.h).
// With ATen's kernels installed the host writes only the logsumexp (NaN in the probabilities'
// place), which is all that backward reads; the module and its price are the same.
//
// and its backward, attention_backward_through_memory(), as `custom_call
// @vtrn.attention_backward`:
//
//   (grad_output [B, H, L, D], query, key, value, saved [B, H, L, S + c], output[, bias])
//     -> (grad_query, grad_key, grad_value), each of its operand's type
//
// float32, bfloat16 or float16; Hk divides H (query head h reads key/value head h / (H / Hk));
// backend_config as flash_attention_config ("causal=0|1;scale=<softmax scale>"). The executor
// runs the calls on the host (runtime/kernels_attention.cc), skipping the products of keys the
// causal mask hides (their probabilities are zero); the compiler prices each as exactly the ops
// it stands for (attention_call_cost: the probabilities through HBM, the few bytes of the
// logsumexp and the backward's read of the output aside), so a call changes how fast the host
// runs it, never its modeled Trainium time.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "vtrn/compiler/fused_attention.h"
#include "vtrn/cost/kernel_cost.h"
#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAttentionTarget = "vtrn.attention";
inline constexpr std::string_view kAttentionBackwardTarget = "vtrn.attention_backward";

/// {output, probabilities} of the attention of |q| [B, H, L, D] over |k|, |v| [B, Hk, S, D]
/// (one float dtype), in float32 (float64 for float64 operands) and converted back: scores
/// q k^T * scale, the causal mask (key j visible to query i when j <= i, top-left aligned as
/// PyTorch's is_causal) and |bias| added as -inf/0 (a pred bias: -inf where false) or its
/// values, the softmax max-subtracted, a row with no visible key all zeros.
std::vector<hlo::Value> attention_through_memory(hlo::Builder& b, hlo::Value q, hlo::Value k,
                                                 hlo::Value v, std::optional<hlo::Value> bias,
                                                 const FlashAttentionConfig& config);

/// {grad_query, grad_key, grad_value} of attention_through_memory() from the gradient |g| of
/// its output and the probabilities |p| it saved: dV = P^T dO, dP = dO V^T, dS = P (dP -
/// rowsum(P dP)) scale (as _softmax_backward_data), dQ = dS K, dK = dS^T Q, the key and value
/// gradients summed over each group of query heads.
std::vector<hlo::Value> attention_backward_through_memory(hlo::Builder& b, hlo::Value g,
                                                          hlo::Value q, hlo::Value k, hlo::Value v,
                                                          hlo::Value p,
                                                          const FlashAttentionConfig& config);

/// The type of @vtrn.attention's second result for query |q| [B, H, L, D] and key |k|
/// [B, Hk, S, D] (float32, bfloat16 or float16): [B, H, L, S + 4 / sizeof(dtype)] of q's dtype.
hlo::TensorType attention_saved_type(const hlo::TensorType& q, const hlo::TensorType& k);

/// Whether |op| is a `custom_call @vtrn.attention` or `@vtrn.attention_backward`.
bool is_attention_call(const hlo::Op& op);

/// The modeled cost of either call: the kernels of the module attention_through_memory() or
/// attention_backward_through_memory() builds for its operands, compiled with default options,
/// summed into one (bound by the engine that bounds most of their time). Throws hlo::Error for a
/// call whose operands or backend_config are not the kernel's.
cost::KernelCost attention_call_cost(const hlo::Block& block, const hlo::Op& op,
                                     const cost::CostModel& model);

}  // namespace vtrn::compiler
