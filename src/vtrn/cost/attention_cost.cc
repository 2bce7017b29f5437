#include "vtrn/cost/attention_cost.h"

#include <algorithm>

namespace vtrn::cost {

std::int64_t AttentionShape::visible_keys() const {
  return causal ? std::max<std::int64_t>(1, (kv_len + 1) / 2) : kv_len;
}

namespace {

// Visible scores of all heads: b h L S'.
double scores(const AttentionShape& a) {
  return static_cast<double>(a.batch) * static_cast<double>(a.heads) *
         static_cast<double>(a.q_len) * static_cast<double>(a.visible_keys());
}

// Elements of one [b, heads, len, d] operand.
double elements(const AttentionShape& a, std::int64_t heads, std::int64_t len) {
  return static_cast<double>(a.batch) * static_cast<double>(heads) * static_cast<double>(len) *
         static_cast<double>(a.head_dim);
}

// |contractions| products of b h (L x d) . (d x S') each.
Work contractions(const AttentionShape& a, std::int64_t count) {
  Work w;
  w.batch = count * a.batch * a.heads;
  w.m = a.q_len;
  w.n = a.visible_keys();
  w.k = a.head_dim;
  w.tensor_dtype = a.dtype;
  return w;
}

}  // namespace

Work flash_attention_forward(const AttentionShape& a) {
  Work w = contractions(a, 2);
  const double e = a.element_bytes;
  w.vector_ops = 4 * scores(a);
  w.scalar_ops = scores(a);
  const double q = elements(a, a.heads, a.q_len), kv = elements(a, a.kv_heads, a.kv_len);
  const double lse = static_cast<double>(a.batch) * a.heads * a.q_len * 4;
  w.bytes = (q + 2 * kv + q) * e + lse;  // Q, K, V read; O written; logsumexp written
  return w;
}

Work flash_attention_backward(const AttentionShape& a) {
  Work w = contractions(a, 5);
  const double e = a.element_bytes;
  const double q = elements(a, a.heads, a.q_len), kv = elements(a, a.kv_heads, a.kv_len);
  w.vector_ops = 4 * scores(a) + 2 * q;
  w.scalar_ops = scores(a);
  const double lse = static_cast<double>(a.batch) * a.heads * a.q_len * 4;
  // Read Q, K, V, O, dO and the logsumexp; write dQ, dK, dV.
  w.bytes = (3 * q + 2 * kv) * e + lse + (q + 2 * kv) * e;
  return w;
}

}  // namespace vtrn::cost
