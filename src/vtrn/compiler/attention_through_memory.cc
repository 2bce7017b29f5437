#include "vtrn/compiler/attention_through_memory.h"

#include <cmath>
#include <string>

#include "vtrn/compiler/ops_cost.h"

namespace vtrn::compiler {

using hlo::Builder;
using hlo::Comparison;
using hlo::DType;
using hlo::Value;

namespace {

Value splat(Builder& b, double value, DType d, const std::vector<std::int64_t>& shape) {
  return b.broadcast_to(b.scalar(d, value), shape);
}

Value convert(Builder& b, Value x, DType d) { return b.type(x).dtype == d ? x : b.convert(x, d); }

/// |x| [B, Hk, S, D] with each head repeated |groups| times (query head h reads key head
/// h / groups).
Value repeat_heads(Builder& b, Value x, std::int64_t groups) {
  if (groups == 1) return x;
  const auto s = b.type(x).dims;
  Value e = b.broadcast_in_dim(x, {s[0], s[1], groups, s[2], s[3]}, {0, 1, 3, 4});
  return b.reshape(e, {s[0], s[1] * groups, s[2], s[3]});
}

/// The gradient of repeat_heads: |g| [B, H, S, D] summed over each group of heads.
Value sum_head_groups(Builder& b, Value g, std::int64_t groups) {
  if (groups == 1) return g;
  const auto s = b.type(g).dims;
  Value r = b.reshape(g, {s[0], s[1] / groups, groups, s[2], s[3]});
  return b.reduce(r, b.scalar(b.type(g).dtype, 0), {2}, hlo::ReduceKind::kAdd);
}

/// [B, H, M, N] x [B, H, N, P] -> [B, H, M, P], or with |transpose_lhs| [B, H, N, M] x ...,
/// with |transpose_rhs| ... x [B, H, P, N].
Value batched_matmul(Builder& b, Value lhs, Value rhs, bool transpose_lhs, bool transpose_rhs) {
  hlo::DotDims dims;
  dims.lhs_batch = {0, 1};
  dims.rhs_batch = {0, 1};
  dims.lhs_contracting = {transpose_lhs ? 2 : 3};
  dims.rhs_contracting = {transpose_rhs ? 3 : 2};
  return b.dot_general(lhs, rhs, dims);
}

/// reduce over the last dim, kept as a dim of 1.
Value reduce_rows(Builder& b, Value x, double init, hlo::ReduceKind kind) {
  const hlo::TensorType& t = b.type(x);
  auto dims = t.dims;
  const auto last = static_cast<std::int64_t>(dims.size()) - 1;
  Value r = b.reduce(x, b.scalar(t.dtype, init), {last}, kind);
  dims.back() = 1;
  return b.reshape(r, dims);
}

}  // namespace

std::vector<Value> attention_through_memory(Builder& b, Value q, Value k, Value v,
                                            std::optional<Value> bias,
                                            const FlashAttentionConfig& config) {
  const DType d = b.type(q).dtype;
  const DType c = d == DType::kF64 ? DType::kF64 : DType::kF32;
  const std::int64_t groups = b.type(q).dims[1] / b.type(k).dims[1];
  Value s =
      batched_matmul(b, convert(b, q, c), repeat_heads(b, convert(b, k, c), groups), false, true);
  const std::vector<std::int64_t> ss = b.type(s).dims;
  s = b.mul(s, splat(b, config.scale, c, ss));
  if (config.causal) {
    // An additive [L, S] bias of 0 and -inf, broadcast over batch and heads: the mask is
    // computed once, not per (batch, head).
    const hlo::TensorType it(DType::kI64, {ss[2], ss[3]});
    Value visible = b.compare(Comparison::kLE, b.iota(it, 1), b.iota(it, 0));
    Value mask = b.select(visible, splat(b, 0.0, c, it.dims), splat(b, -INFINITY, c, it.dims));
    s = b.add(s, b.broadcast_in_dim(mask, ss, {2, 3}));
  }
  if (bias) {
    const hlo::TensorType& bt = b.type(*bias);
    Value m = bt.dtype == DType::kPred
                  ? b.select(*bias, splat(b, 0.0, c, bt.dims), splat(b, -INFINITY, c, bt.dims))
                  : convert(b, *bias, c);
    if (b.type(m).dims != ss) m = b.broadcast_to(m, ss);
    s = b.add(s, m);
  }
  Value m = reduce_rows(b, s, -INFINITY, hlo::ReduceKind::kMax);
  const auto ms = b.type(m).dims;
  Value none = b.compare(Comparison::kEQ, m, splat(b, -INFINITY, c, ms));
  m = b.select(none, splat(b, 0.0, c, ms), m);
  Value e = b.exp(b.sub(s, b.broadcast_to(m, ss)));
  Value l = reduce_rows(b, e, 0.0, hlo::ReduceKind::kAdd);
  // A row with a visible key sums to at least 1 (its largest term is exp(0)), so max(l, 1) is
  // l there; a row with none has e == 0 and sum 0, and 0 / 1 gives its zero weights without a
  // select over the scores (a NaN sum stays NaN). The rows' chain then has no second output
  // (runtime/kernels_chain.cc).
  l = b.max(l, splat(b, 1.0, c, ms));
  Value p = b.div(e, b.broadcast_to(l, ss));
  Value o = batched_matmul(b, p, repeat_heads(b, convert(b, v, c), groups), false, false);
  return {convert(b, o, d), convert(b, p, d)};
}

std::vector<Value> attention_backward_through_memory(Builder& b, Value g, Value q, Value k, Value v,
                                                     Value p, const FlashAttentionConfig& config) {
  const DType d = b.type(q).dtype;
  const DType c = d == DType::kF64 ? DType::kF64 : DType::kF32;
  const std::int64_t groups = b.type(q).dims[1] / b.type(k).dims[1];
  Value qc = convert(b, q, c), kc = repeat_heads(b, convert(b, k, c), groups);
  Value vc = repeat_heads(b, convert(b, v, c), groups);
  g = convert(b, g, c);
  p = convert(b, p, c);
  const std::vector<std::int64_t> ss = b.type(p).dims;
  Value dv = batched_matmul(b, p, g, true, false);   // p^T dO
  Value dp = batched_matmul(b, g, vc, false, true);  // dO v^T
  // softmax backward: p * (dp - sum(p * dp)), as _softmax_backward_data computes it.
  Value delta = reduce_rows(b, b.mul(p, dp), 0.0, hlo::ReduceKind::kAdd);
  Value ds = b.mul(p, b.sub(dp, b.broadcast_to(delta, ss)));
  ds = b.mul(ds, splat(b, config.scale, c, ss));
  Value dq = batched_matmul(b, ds, kc, false, false);  // ds k
  Value dk = batched_matmul(b, ds, qc, true, false);   // ds^T q
  return {convert(b, dq, d), convert(b, sum_head_groups(b, dk, groups), b.type(k).dtype),
          convert(b, sum_head_groups(b, dv, groups), b.type(v).dtype)};
}

hlo::TensorType attention_saved_type(const hlo::TensorType& q, const hlo::TensorType& k) {
  const std::int64_t tail = 4 / hlo::dtype_size(q.dtype);  // the logsumexp's float32 bits
  return hlo::TensorType(q.dtype, {q.dims[0], q.dims[1], q.dims[2], k.dims[2] + tail});
}

bool is_attention_call(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && (op.call_target_name == kAttentionTarget ||
                                                 op.call_target_name == kAttentionBackwardTarget);
}

cost::KernelCost attention_call_cost(const hlo::Block& block, const hlo::Op& op,
                                     const cost::CostModel& model) {
  const std::string what = "custom_call @" + op.call_target_name;
  const bool backward = op.call_target_name == kAttentionBackwardTarget;
  const std::size_t first = backward ? 1 : 0;  // the query's operand
  const std::size_t n = op.operands.size();
  if (backward ? (n != 6 && n != 7) : (n != 3 && n != 4))
    throw hlo::Error(what + " takes " + (backward ? "6 or 7" : "3 or 4") + " operands, got " +
                     std::to_string(n));
  const std::optional<FlashAttentionConfig> config =
      parse_flash_attention_config(op.backend_config);
  if (!config)
    throw hlo::Error(what + " has a malformed backend_config \"" + op.backend_config + "\"");
  const hlo::TensorType& qt = block.type(op.operands[first]);
  const hlo::TensorType& kt = block.type(op.operands[first + 1]);
  const hlo::TensorType& vt = block.type(op.operands[first + 2]);
  if (qt.dims.size() != 4 || kt.dims.size() != 4 || kt.dims != vt.dims || qt.dtype != kt.dtype ||
      qt.dtype != vt.dtype || qt.dims[0] != kt.dims[0] || qt.dims[3] != kt.dims[3] ||
      kt.dims[1] <= 0 || qt.dims[1] % kt.dims[1] != 0 ||
      (qt.dtype != DType::kF32 && qt.dtype != DType::kBF16 && qt.dtype != DType::kF16))
    throw hlo::Error(what +
                     " needs query [B, H, L, D] and key, value [B, Hk, S, D] of one dtype "
                     "(float32, bfloat16 or float16) with Hk dividing H; got " +
                     qt.str() + ", " + kt.str() + ", " + vt.str());
  const hlo::TensorType pt(qt.dtype, {qt.dims[0], qt.dims[1], qt.dims[2], kt.dims[2]});
  const hlo::TensorType st = attention_saved_type(qt, kt);
  if (backward && (block.type(op.operands[0]) != qt || block.type(op.operands[4]) != st ||
                   block.type(op.operands[5]) != qt))
    throw hlo::Error(what + " needs grad_output " + qt.str() + ", saved probabilities " + st.str() +
                     " and output " + qt.str() + "; got " + block.type(op.operands[0]).str() +
                     ", " + block.type(op.operands[4]).str() + ", " +
                     block.type(op.operands[5]).str());
  std::vector<hlo::TensorType> results_want{qt, st};
  if (backward) results_want = {qt, kt, vt};
  bool results_fit = op.results.size() == results_want.size();
  for (std::size_t i = 0; results_fit && i < op.results.size(); ++i)
    results_fit = block.type(op.results[i]) == results_want[i];
  if (!results_fit) {
    std::string want;
    for (const hlo::TensorType& t : results_want) want += (want.empty() ? "" : ", ") + t.str();
    throw hlo::Error(what + " gives (" + want + ")" +
                     (backward ? ""
                               : ": the output, and the probabilities each row followed by "
                                 "its float32 logsumexp"));
  }
  const std::size_t bias_operand = backward ? 6 : 3;
  std::optional<hlo::TensorType> bias;
  if (n == bias_operand + 1) {
    bias = block.type(op.operands[bias_operand]);
    const std::vector<std::int64_t> full{qt.dims[0], qt.dims[1], qt.dims[2], kt.dims[2]};
    bool fits = bias->dims.size() <= 4 && (bias->dtype == DType::kPred || bias->dtype == qt.dtype);
    for (std::size_t i = 1; fits && i <= bias->dims.size(); ++i) {
      const std::int64_t dim = bias->dims[bias->dims.size() - i], want = full[4 - i];
      fits = dim == want || dim == 1;
    }
    if (!fits)
      throw hlo::Error(what +
                       " needs an attention bias of pred or the query's dtype that "
                       "broadcasts to [B, H, L, S]; got " +
                       bias->str());
  }
  Builder b("attention_through_memory");
  std::vector<Value> results;
  if (backward) {
    const Value g = b.param(qt), q = b.param(qt), k = b.param(kt), v = b.param(vt);
    results = attention_backward_through_memory(b, g, q, k, v, b.param(pt), *config);
  } else {
    const Value q = b.param(qt), k = b.param(kt), v = b.param(vt);
    std::optional<Value> bias_value;
    if (bias) bias_value = b.param(*bias);
    results = attention_through_memory(b, q, k, v, bias_value, *config);
  }
  return cost_as_ops(b.finish(results), model);
}

}  // namespace vtrn::compiler
