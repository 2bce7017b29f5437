// The work of a fused (flash) attention kernel, forward and backward, as the Neuron SDK's NKI
// flash attention kernels do it: the scores of a query tile against a key tile live in SBUF and
// PSUM only, so HBM sees the query, key, value and output (and the float32 logsumexp the
// backward reads), never the [query, key] score matrix. The Tensor engine does the contractions,
// the Vector and Scalar engines the online softmax over each visible score.
//
//   forward:  S = Q K^T and O = P V: 2 contractions of 2 b h L S' d FLOPs each (4 b h L S' d);
//             per visible score 4 Vector passes (scale, running max, subtract, row sum) and
//             one Scalar exp. HBM: Q, K, V, O in their dtype, logsumexp in float32.
//   backward: S = Q K^T recomputed, dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q:
//             5 contractions (10 b h L S' d FLOPs); per visible score 4 Vector passes
//             (subtract the logsumexp, dP - delta, times P, times the scale) and one Scalar exp;
//             delta = rowsum(dO * O) is 2 b h L d Vector passes. HBM: Q, K, V, O, dO,
//             logsumexp read, dQ, dK, dV written.
// S' is the key length a query sees on average: S without a mask; with the causal mask the
// kernel skips the tiles above the diagonal, half the scores ((S + 1) / 2).
// The result is a Work, priced by CostModel::estimate like every other kernel.
#pragma once

#include <cstdint>

#include "vtrn/cost/kernel_cost.h"

namespace vtrn::cost {

struct AttentionShape {
  std::int64_t batch = 1;
  std::int64_t heads = 1;     ///< query heads
  std::int64_t kv_heads = 1;  ///< key/value heads (fewer than heads: grouped-query attention)
  std::int64_t q_len = 0, kv_len = 0;
  std::int64_t head_dim = 0;
  bool causal = false;
  hw::TensorEngineDType dtype = hw::TensorEngineDType::kBF16;
  int element_bytes = 2;  ///< bytes of one element of Q, K, V, O and their gradients

  /// Key length each query sees on average (S', above).
  std::int64_t visible_keys() const;
};

Work flash_attention_forward(const AttentionShape& a);
Work flash_attention_backward(const AttentionShape& a);

}  // namespace vtrn::cost
