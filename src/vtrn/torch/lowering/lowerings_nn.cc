// Neural-network ops: matmuls, softmax and log-softmax with their backward, the NLL loss, and
// the embedding's gather/scatter. Floats compute in float32 and round once on store.
#include <cmath>
#include <numeric>
#include <optional>

#include "vtrn/compiler/aten_addmm.h"
#include "vtrn/compiler/aten_nll_loss.h"
#include "vtrn/compiler/aten_softmax.h"
#include "vtrn/compiler/attention_through_memory.h"
#include "vtrn/compiler/fused_attention.h"
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;
using hlo::ReduceKind;

/// Both matmul operands must have the same dtype, as PyTorch requires (it raises otherwise).
DType matmul_dtype(Lowerer& L, Value a, Value b) {
  if (L.dtype(a) != L.dtype(b)) throw Unsupported("matmul operands of different dtypes");
  L.require_claimed(L.dtype(a));
  return L.dtype(a);
}

/// [b.., n, k] x [b.., k, m] with |batch| leading batch dims, in float32. Half-precision
/// operands go in as they are, with a float32 result (their products are exact in float32
/// either way): the executor then runs bf16 on the CPU's bf16 instructions.
Value matmul(Lowerer& L, Value a, Value b, int batch, bool sgemm = false) {
  const DType c = opmath(L.dtype(a));
  hlo::DotDims dims;
  for (int i = 0; i < batch; ++i) {
    dims.lhs_batch.push_back(i);
    dims.rhs_batch.push_back(i);
  }
  dims.lhs_contracting = {batch + 1};
  dims.rhs_contracting = {batch};
  return L.b.dot_general(a, b, dims, c, sgemm);
}

/// The buffer |v| reads where it is its last two dims swapped (a weight's .t(): a parameter
/// stored transposed, or a transpose op in a compiled graph); nullopt otherwise.
std::optional<Value> stored_transposed(Lowerer& L, Value v) {
  const hlo::Op* op = L.b.defining_op(v);
  if (op == nullptr || op->kind != hlo::OpKind::kTranspose || op->dims.size() != 2 ||
      op->dims[0] != 1 || op->dims[1] != 0)
    return std::nullopt;
  return Value{op->operands[0]};
}

/// float32 addmm as ATen's one sgemm onto the bias (compiler/aten_addmm.h).
Value aten_addmm(Lowerer& L, Value self, Value a, Value b) {
  const std::int64_t m = L.shape(a)[0], n = L.shape(b)[1];
  compiler::AtenAddmmConfig config;
  config.beta = L.real(3);
  std::vector<Value> operands;
  if (config.beta != 0.0) operands.push_back(L.broadcast_to(self, {m, n}));
  const std::optional<Value> lhs = stored_transposed(L, a), rhs = stored_transposed(L, b);
  config.lhs_transposed = lhs.has_value();
  config.rhs_transposed = rhs.has_value();
  operands.push_back(lhs.value_or(a));
  operands.push_back(rhs.value_or(b));
  operands.push_back(L.scalar(4, DType::kF32));
  return L.b.custom_call(std::string(compiler::kAtenAddmmTarget), std::move(operands),
                         {TensorType(DType::kF32, {m, n})}, compiler::aten_addmm_config(config))[0];
}

std::vector<Value> mm(Lowerer& L, int batch) {
  Value a = L.tensor(0), b = L.tensor(1);
  const DType d = matmul_dtype(L, a, b);
  if (L.rank(a) != batch + 2 || L.rank(b) != batch + 2) throw Unsupported("matmul rank");
  // torch.mm's and torch.bmm's own products (hlo::Op::sgemm).
  return {L.convert(matmul(L, a, b, batch, true), L.out_dtype(0, d))};
}

/// The softmax axis of |x| (a 0-d tensor is treated as shape [1]).
std::int64_t softmax_dim(Lowerer& L, Value x, int arg) {
  return L.rank(x) == 0 ? 0 : L.wrap_dim(L.integer(arg), L.rank(x));
}

Value as_vector_if_scalar(Lowerer& L, Value x) { return L.rank(x) == 0 ? L.b.reshape(x, {1}) : x; }

Value broadcast_back(Lowerer& L, Value reduced_keepdim, Value like) {
  return L.broadcast_to(reduced_keepdim, L.shape(like));
}

/// float32 softmax or log_softmax over the last dim of |operands| (x, or grad_output and output
/// for the |backward|), by ATen's kernels (compiler/aten_softmax.h); nullopt for a 0-d or empty
/// tensor, which the formulas below take.
std::optional<Value> aten_softmax(Lowerer& L, std::vector<Value> operands, bool log,
                                  bool backward) {
  const std::vector<std::int64_t> s = L.shape(operands[0]);
  std::int64_t elements = 1;
  for (std::int64_t d : s) elements *= d;
  if (s.empty() || elements == 0) return std::nullopt;
  const std::int64_t n = s.back(), rows = elements / n;
  for (Value& v : operands) v = L.b.reshape(v, {rows, n});
  const Value y = L.b.custom_call(std::string(compiler::kAtenSoftmaxTarget), std::move(operands),
                                  {TensorType(DType::kF32, {rows, n})},
                                  compiler::aten_softmax_config({log, backward}))[0];
  return L.b.reshape(y, s);
}

/// softmax / log_softmax (self, dim, half_to_float).
LowerFn softmax(bool log) {
  return [log](Lowerer& L) -> std::vector<Value> {
    Value x0 = L.tensor(0);
    const DType in = L.dtype(x0);
    L.require_claimed(in);
    // half_to_float converts float16 only (CUDA); the CPU refuses it altogether.
    if (L.flag(2) && in != DType::kF16) throw Unsupported("softmax half_to_float of a non-half");
    const DType result = L.out_dtype(0, L.flag(2) ? DType::kF32 : in);
    const std::int64_t dim = softmax_dim(L, x0, 1);
    Value x = as_vector_if_scalar(L, L.convert(x0, opmath(in)));
    // Over the last dim the CPU's float32 kernel sums each row in vec::reduce_all's order and
    // (softmax) multiplies by the sum's reciprocal; its other kernels divide by the sum.
    const bool lastdim_f32 = in == DType::kF32 && dim == L.rank(x) - 1;
    if (lastdim_f32 && result == DType::kF32)
      if (const std::optional<Value> y = aten_softmax(L, {x0}, log, false)) return {*y};
    Value m = L.reduce(x, {dim}, ReduceKind::kMax, true);
    // A row of -inf has max -inf; subtracting it would give NaN where the CPU also gives NaN.
    Value shifted = L.b.sub(x, broadcast_back(L, m, x));
    // That kernel's exp is SLEEF's on every element (vec::map), a row's tail included.
    Value e = lastdim_f32 ? L.b.sleef_exp(shifted) : L.b.exp(shifted);
    Value s = L.reduce(e, {dim}, ReduceKind::kAdd, true, false, lastdim_f32);
    Value y;
    if (log) {
      // Over the last dim the CPU kernel keeps the sum and its log in the input's type.
      const bool round = opmath(in) != in && dim == L.rank(x) - 1;
      auto rounded = [&](Value v) { return round ? L.convert(L.convert(v, in), opmath(in)) : v; };
      y = L.b.sub(shifted, broadcast_back(L, rounded(L.b.unary(OpKind::kLog, rounded(s))), x));
    } else if (lastdim_f32) {
      y = L.b.mul(e, broadcast_back(L, L.b.div(L.full_like(s, 1.0), s), x));
    } else {
      y = L.b.div(e, broadcast_back(L, s, x));
    }
    if (L.rank(x0) == 0) y = L.b.reshape(y, {});
    return {L.convert(y, result)};
  };
}

/// _softmax_backward_data / _log_softmax_backward_data (grad_output, output, dim, input_dtype).
LowerFn softmax_backward(bool log) {
  return [log](Lowerer& L) -> std::vector<Value> {
    Value g0 = L.tensor(0), y0 = L.tensor(1);
    L.require_claimed(L.dtype(g0));
    // The gradient's own type; float only when the forward ran half_to_float on half input.
    const DType grad_dtype = L.dtype(g0);
    const DType input_dtype = L.arg(3).dtype;
    const DType result = L.out_dtype(
        0,
        grad_dtype == DType::kF32 && opmath(input_dtype) != input_dtype ? input_dtype : grad_dtype);
    const DType c = opmath(L.dtype(g0));
    const std::int64_t dim = softmax_dim(L, g0, 2);
    Value g = as_vector_if_scalar(L, L.convert(g0, c)),
          y = as_vector_if_scalar(L, L.convert(y0, c));
    // Over the last dim the CPU's float32 kernel sums each row in vec::reduce_all's order, and
    // (log_softmax) takes SLEEF's exp on every element.
    const bool lastdim_f32 =
        grad_dtype == DType::kF32 && L.dtype(y0) == DType::kF32 && dim == L.rank(g) - 1;
    if (lastdim_f32 && result == DType::kF32 && L.shape(g0) == L.shape(y0))
      if (const std::optional<Value> gi = aten_softmax(L, {g0, y0}, log, true)) return {*gi};
    Value gi;
    if (log) {
      Value s = L.reduce(g, {dim}, ReduceKind::kAdd, true, false, lastdim_f32);
      if (lastdim_f32) {
        // ATen's kernel computes x - y.exp() * sum, which its compiler contracts to one fused
        // multiply-add: g + exp(y) * -sum, rounded once. (-sum is taken once per row, before it
        // is broadcast.)
        gi = L.b.fma(L.b.sleef_exp(y), broadcast_back(L, L.b.neg(s), g), g);
      } else {
        gi = L.b.sub(g, L.b.mul(L.b.exp(y), broadcast_back(L, s, g)));
      }
    } else {
      Value s = L.reduce(L.b.mul(g, y), {dim}, ReduceKind::kAdd, true, false, lastdim_f32);
      gi = L.b.mul(y, L.b.sub(g, broadcast_back(L, s, g)));
    }
    if (L.rank(g0) == 0) gi = L.b.reshape(gi, {});
    return {L.convert(gi, result)};
  };
}

/// For nll_loss on [N, C] (or [C]) input: where each sample's target is, as gather/scatter
/// indices [N, 2] (row, class), and the per-sample weight [N], 0 where the target is ignore_index
/// or outside [0, C) (whose index is clamped into range, so every index is valid). Only N values
/// are read or written beside the [N, C] input: a one-hot mask of the targets cost as much as
/// the logits themselves.
struct NllParts {
  Value index, weight, valid;
  std::int64_t n, c;
};

/// nll_loss's [N, C] (or [C]) input checked as the CPU checks it (it raises): an int64/uint8
/// target of the batch's size, a weight of the input's dtype with one value per class. {N, C}.
std::pair<std::int64_t, std::int64_t> nll_dims(Lowerer& L, Value self, Value target,
                                               int weight_arg) {
  if (L.rank(self) > 2 || L.rank(self) < 1) throw Unsupported("nll_loss of rank > 2 (nll_loss2d)");
  const std::int64_t n = L.rank(self) == 2 ? L.shape(self)[0] : 1;
  const std::int64_t c = L.shape(self).back();
  // nll_loss_forward's checks (the CPU raises): an int64/uint8 target of the batch's size, a
  // weight of the input's dtype with one value per class.
  const DType td = L.dtype(target);
  if ((td != DType::kI64 && td != DType::kU8) || L.rank(target) > 1 ||
      (L.rank(self) == 2 && (L.rank(target) != 1 || L.shape(target)[0] != n)) ||
      (L.rank(self) == 1 && L.rank(target) != 0))
    throw Unsupported("nll_loss target");
  if (L.has(weight_arg)) {
    Value weight = L.tensor(weight_arg);
    if (L.dtype(weight) != L.dtype(self) || L.rank(weight) != 1 || L.shape(weight)[0] != c)
      throw Unsupported("nll_loss weight");
  }
  if (c == 0) throw Unsupported("nll_loss over zero classes");
  return {n, c};
}

NllParts nll_parts(Lowerer& L, Value self, Value target, int weight_arg, std::int64_t ignore_index,
                   DType compute) {
  const auto [n, c] = nll_dims(L, self, target, weight_arg);
  Value t = L.b.reshape(L.convert(target, DType::kI64), {n});
  auto splat = [&](double v, DType d) { return L.b.broadcast_to(L.constant(v, d), {n}); };
  Value valid =
      L.b.compare(Comparison::kNE, t, splat(static_cast<double>(ignore_index), DType::kI64));
  valid = L.b.binary(OpKind::kAnd, valid, L.b.compare(Comparison::kGE, t, splat(0, DType::kI64)));
  valid = L.b.binary(OpKind::kAnd, valid,
                     L.b.compare(Comparison::kLT, t, splat(static_cast<double>(c), DType::kI64)));
  Value column =
      L.b.clamp(splat(0, DType::kI64), t, splat(static_cast<double>(c - 1), DType::kI64));
  Value index = L.b.concatenate(
      {L.b.iota(TensorType(DType::kI64, {n, 1}), 0), L.b.reshape(column, {n, 1})}, 1);
  Value w;
  if (L.has(weight_arg)) {
    hlo::GatherDims g;
    g.collapsed_slice_dims = {0};
    g.start_index_map = {0};
    g.index_vector_dim = 1;
    w = L.b.gather(L.convert(L.tensor(weight_arg), compute), L.b.reshape(column, {n, 1}), g, {1});
  } else {
    w = splat(1.0, compute);
  }
  w = L.b.select(valid, w, splat(0.0, compute));
  return {index, w, valid, n, c};
}

/// Checks the operands: one claimed float dtype, [B, H, L, D] and [B, Hk, S, D] with Hk dividing
/// H (grouped-query attention).
void check_attention(Lowerer& L, Value q, Value k, Value v) {
  const DType d = L.dtype(q);
  L.require_claimed(d);
  if (L.dtype(k) != d || L.dtype(v) != d || L.rank(q) != 4 || L.rank(k) != 4 || L.rank(v) != 4)
    throw Unsupported("attention operands");
  const auto qs = L.shape(q), ks = L.shape(k), vs = L.shape(v);
  if (qs[0] != ks[0] || ks[1] == 0 || qs[1] % ks[1] != 0 || ks[0] != vs[0] || ks[1] != vs[1] ||
      ks[2] != vs[2] || qs[3] != ks[3])
    throw Unsupported("attention shapes");
}

}  // namespace

void add_nn_lowerings(std::vector<OpLowering>& r) {
  // vtrn::sdpa_forward(query, key, value, attn_bias?, is_causal, scale) -> (output, saved):
  // the attention of scaled_dot_product_attention as one module through HBM
  // (compiler/attention_through_memory.h; softmax in float32). Key and value may have fewer
  // heads than the query (grouped-query attention). A row whose keys are all masked gets zero
  // probabilities, as the math path's _safe_softmax gives. The probabilities, in the inputs'
  // type, are what the backward reads (PyTorch's math path saves the same tensor), each row
  // with its logsumexp after it (for ATen's flash backward on the host, which reads only that:
  // the host then leaves NaN in the probabilities' place). The module is one call
  // of the kernel that stands for those ops, priced as they are (float64: the ops, saving the
  // probabilities alone).
  add(r, {"vtrn::sdpa_forward"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value q = L.tensor(0), k = L.tensor(1), v = L.tensor(2);
        check_attention(L, q, k, v);
        const compiler::FlashAttentionConfig config{L.flag(4), L.real(5)};
        const DType d = L.dtype(q);
        std::optional<Value> bias;
        if (L.has(3)) bias = L.tensor(3);
        const bool bias_taken = !bias || L.dtype(*bias) == DType::kPred || L.dtype(*bias) == d;
        if (bias_taken && (d == DType::kF32 || d == DType::kBF16 || d == DType::kF16)) {
          const auto qs = L.shape(q);
          std::vector<TensorType> results{TensorType(d, qs),
                                          compiler::attention_saved_type(L.b.type(q), L.b.type(k))};
          std::vector<Value> operands{q, k, v};
          if (bias) operands.push_back(*bias);
          return L.b.custom_call(std::string(compiler::kAttentionTarget), std::move(operands),
                                 std::move(results), compiler::flash_attention_config(config));
        }
        return compiler::attention_through_memory(L.b, q, k, v, bias, config);
      }));
  // vtrn::sdpa_backward(grad_out, query, key, value, out, saved, attn_bias?, is_causal, scale)
  //   -> (grad_query, grad_key, grad_value): the backward of sdpa_forward's module, one call
  //   of the kernel that stands for its ops (compiler/attention_through_memory.h), reading the
  //   probabilities and logsumexp the forward saved, its output and its mask.
  add(r, {"vtrn::sdpa_backward"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value g = L.tensor(0), q = L.tensor(1), k = L.tensor(2), v = L.tensor(3);
        Value out = L.tensor(4), saved = L.tensor(5);
        check_attention(L, q, k, v);
        const compiler::FlashAttentionConfig config{L.flag(7), L.real(8)};
        const DType d = L.dtype(q);
        const auto qs = L.shape(q);
        if (L.dtype(g) != d || L.shape(g) != qs || L.b.type(out) != L.b.type(q))
          throw Unsupported("attention gradient operands");
        // The kernel's saved probabilities and logsumexp, or the probabilities alone of the
        // module of ops (float64, or a bias the kernel does not take).
        if ((d == DType::kF32 || d == DType::kBF16 || d == DType::kF16) &&
            L.b.type(saved) == compiler::attention_saved_type(L.b.type(q), L.b.type(k))) {
          std::vector<Value> operands{g, q, k, v, saved, out};
          if (L.has(6)) operands.push_back(L.tensor(6));
          return L.b.custom_call(std::string(compiler::kAttentionBackwardTarget),
                                 std::move(operands), {L.b.type(q), L.b.type(k), L.b.type(v)},
                                 compiler::flash_attention_config(config));
        }
        const std::vector<std::int64_t> ps{qs[0], qs[1], qs[2], L.shape(k)[2]};
        if (L.dtype(saved) != d || L.shape(saved) != ps)
          throw Unsupported("attention gradient operands");
        return compiler::attention_backward_through_memory(L.b, g, q, k, v, saved, config);
      }));
  // vtrn::flash_attention_forward(query, key, value, is_causal, scale) -> (output, logsumexp)
  // and vtrn::flash_attention_backward(grad_out, query, key, value, out, logsumexp, is_causal,
  // scale) -> (grad_query, grad_key, grad_value): one call each of the fused attention kernels
  // (compiler/fused_attention.h), the scores never leaving the chip.
  add(r, {"vtrn::flash_attention_forward"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value q = L.tensor(0), k = L.tensor(1), v = L.tensor(2);
        check_attention(L, q, k, v);
        const auto qs = L.shape(q);
        std::vector<TensorType> results{TensorType(L.dtype(q), qs),
                                        TensorType(DType::kF32, {qs[0], qs[1], qs[2]})};
        return L.b.custom_call(std::string(compiler::kFlashAttentionTarget), {q, k, v},
                               std::move(results),
                               compiler::flash_attention_config({L.flag(3), L.real(4)}));
      }));
  add(r, {"vtrn::flash_attention_backward"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value q = L.tensor(1), k = L.tensor(2), v = L.tensor(3);
        check_attention(L, q, k, v);
        std::vector<Value> args{L.tensor(0), q, k, v, L.tensor(4), L.tensor(5)};
        std::vector<TensorType> results{L.b.type(q), L.b.type(k), L.b.type(v)};
        return L.b.custom_call(std::string(compiler::kFlashAttentionBackwardTarget),
                               std::move(args), std::move(results),
                               compiler::flash_attention_config({L.flag(6), L.real(7)}));
      }));
  // Matmuls read an operand stored transposed (a weight's .t(), the gradient's .t() in the
  // weight gradient) in place: the dot takes it as it lies instead of a staged copy.
  OpLowering mm2 = entry(floats(), [](Lowerer& L) { return mm(L, 0); });
  mm2.reads_stored_transposed = true;
  add(r, {"mm", "mm.out"}, mm2);
  OpLowering bmm = entry(floats(), [](Lowerer& L) { return mm(L, 1); });
  bmm.reads_stored_transposed = true;
  add(r, {"bmm", "bmm.out"}, bmm);
  // addmm(self, mat1, mat2, beta, alpha) = beta * self + alpha * (mat1 @ mat2). beta is static:
  // beta == 0 ignores self entirely (NaN in self does not propagate), as PyTorch documents.
  OpLowering addmm = entry(floats(), [](Lowerer& L) -> std::vector<Value> {
    Value self = L.tensor(0), a = L.tensor(1), b = L.tensor(2);
    const DType d = matmul_dtype(L, a, b);
    if (L.dtype(self) != d || L.rank(a) != 2 || L.rank(b) != 2) throw Unsupported("addmm operands");
    if (d == DType::kF32 && L.out_dtype(0, d) == DType::kF32) return {aten_addmm(L, self, a, b)};
    const DType c = opmath(d);
    Value prod = matmul(L, a, b, 0);
    prod = L.b.mul(prod, L.broadcast_to(L.scalar(4, c), L.shape(prod)));
    const double beta = L.real(3);
    if (beta != 0.0) {
      Value s = L.broadcast_to(L.convert(self, c), L.shape(prod));
      if (beta != 1.0) s = L.b.mul(s, L.full_like(s, beta));
      prod = L.b.add(s, prod);
    }
    return {L.convert(prod, L.out_dtype(0, d))};
  });
  addmm.static_scalars = {3};
  addmm.reads_stored_transposed = true;
  add(r, {"addmm", "addmm.out"}, addmm);

  add(r, {"_softmax", "_softmax.out"}, entry(floats(), softmax(false)));
  add(r, {"_log_softmax", "_log_softmax.out"}, entry(floats(), softmax(true)));
  add(r, {"_softmax_backward_data", "_softmax_backward_data.out"},
      entry(floats(), softmax_backward(false)));
  add(r, {"_log_softmax_backward_data", "_log_softmax_backward_data.out"},
      entry(floats(), softmax_backward(true)));

  // nll_loss_forward(self, target, weight?, reduction, ignore_index) -> (output, total_weight)
  add(r, {"nll_loss_forward", "nll_loss_forward.output"},
      entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value self = L.tensor(0);
        const DType d = L.dtype(self);
        L.require_claimed(d);
        const DType c = opmath(d);
        const std::int64_t reduction = L.integer(3);
        if (reduction != 0 && (d == DType::kF32 || d == DType::kBF16)) {
          // The CPU's sum order and rounding (compiler/aten_nll_loss.h).
          const auto [n, classes] = nll_dims(L, self, L.tensor(1), 2);
          std::vector<Value> operands{L.b.reshape(self, {n, classes}),
                                      L.b.reshape(L.convert(L.tensor(1), DType::kI64), {n})};
          if (L.has(2)) operands.push_back(L.tensor(2));
          std::vector<Value> out =
              L.b.custom_call(std::string(compiler::kAtenNllLossTarget), std::move(operands),
                              {TensorType(d, {}), TensorType(d, {})},
                              compiler::aten_nll_loss_config({L.integer(4), reduction == 1}));
          return {L.convert(out[0], L.out_dtype(0, d)), L.convert(out[1], L.out_dtype(1, d))};
        }
        NllParts p = nll_parts(L, self, L.tensor(1), 2, L.integer(4), c);
        Value x = L.b.reshape(L.convert(self, c), {p.n, p.c});
        hlo::GatherDims g;
        g.collapsed_slice_dims = {0, 1};
        g.start_index_map = {0, 1};
        g.index_vector_dim = 1;
        // An ignored sample's logit may be infinite: masked before the weight multiplies it.
        Value picked = L.b.gather(x, p.index, g, {1, 1});
        picked = L.b.select(p.valid, picked, L.full_like(picked, 0.0));
        Value loss = L.b.neg(L.b.mul(picked, p.weight));
        Value total = L.reduce(p.weight, {0}, ReduceKind::kAdd, false);
        Value out;
        if (reduction == 0) {
          out = L.rank(self) == 1 ? L.b.reshape(loss, {}) : loss;
          total = L.constant(0.0, c);
        } else {
          out = L.reduce(loss, {0}, ReduceKind::kAdd, false);
          if (reduction == 1) out = L.b.div(out, total);
        }
        return {L.convert(out, L.out_dtype(0, d)), L.convert(total, L.out_dtype(1, d))};
      }));
  // nll_loss_backward(grad_output, self, target, weight?, reduction, ignore_index, total_weight)
  add(r, {"nll_loss_backward", "nll_loss_backward.grad_input"},
      entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value self = L.tensor(1);
        const DType d = L.dtype(self);
        L.require_claimed(d);
        const DType c = opmath(d);
        const std::int64_t reduction = L.integer(4);
        NllParts p = nll_parts(L, self, L.tensor(2), 3, L.integer(5), c);
        Value g = L.convert(L.tensor(0), c);
        Value scale;  // [N]
        if (reduction == 0) {
          scale = L.rank(g) == 0 ? L.b.broadcast_to(g, {p.n}) : L.b.reshape(g, {p.n});
        } else {
          Value gs = L.b.reshape(g, {});
          if (reduction == 1) gs = L.b.div(gs, L.b.reshape(L.convert(L.tensor(6), c), {}));
          scale = L.b.broadcast_to(gs, {p.n});
        }
        // Zeros with each sample's -scale * weight at its target; an ignored sample writes +0,
        // as the CPU leaves its row untouched.
        Value per_sample = L.b.neg(L.b.mul(scale, p.weight));
        per_sample = L.b.select(p.valid, per_sample, L.full_like(per_sample, 0.0));
        hlo::ScatterDims sd;
        sd.inserted_window_dims = {0, 1};
        sd.scatter_dims_to_operand_dims = {0, 1};
        sd.index_vector_dim = 1;
        Value grad = L.b.scatter(L.b.broadcast_to(L.constant(0.0, c), {p.n, p.c}), p.index,
                                 per_sample, sd, hlo::ScatterKind::kReplace);
        return {L.convert(L.b.reshape(grad, L.shape(self)), L.out_dtype(0, d))};
      }));

  // index_select(self, dim, index): a gather of whole slices along |dim|.
  add(r, {"index_select", "index_select.out"},
      entry(all_types(), [](Lowerer& L) -> std::vector<Value> {
        Value self = L.tensor(0), index = L.tensor(2);
        L.require_claimed(L.dtype(self));
        if (L.rank(index) > 1 || !hlo::is_integer(L.dtype(index)))
          throw Unsupported("index_select index");
        if (L.rank(self) == 0) throw Unsupported("index_select of a 0-d tensor");
        const int r = L.rank(self);
        const std::int64_t dim = L.wrap_dim(L.integer(1), r);
        const std::int64_t n = L.rank(index) == 0 ? 1 : L.shape(index)[0];
        if (n == 0 || L.shape(self)[static_cast<std::size_t>(dim)] == 0)
          throw Unsupported("empty index_select");
        Value idx = L.b.reshape(L.convert(index, DType::kI64), {n, 1});
        hlo::GatherDims g;
        for (std::int64_t k = 0; k < r; ++k)
          if (k != dim) g.offset_dims.push_back(k);
        g.collapsed_slice_dims = {dim};
        g.start_index_map = {dim};
        g.index_vector_dim = 1;
        std::vector<std::int64_t> slice = L.shape(self);
        slice[static_cast<std::size_t>(dim)] = 1;
        Value out = L.b.gather(self, idx, g, slice);
        return {L.convert(out, L.out_dtype(0, L.dtype(self)))};
      }));

  // embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
  // rows of grad_output scatter-added into a [num_weights, D] zero tensor.
  add(r, {"embedding_dense_backward", "embedding_dense_backward.out"},
      entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value grad = L.tensor(0), indices = L.tensor(1);
        const DType d = L.dtype(grad);
        L.require_claimed(d);
        if (L.flag(4)) throw Unsupported("embedding backward with scale_grad_by_freq");
        const std::int64_t num_weights = L.integer(2), padding_idx = L.integer(3);
        const std::int64_t dim = L.shape(grad).empty() ? 1 : L.shape(grad).back();
        std::int64_t n = 1;
        for (std::int64_t s : L.shape(indices)) n *= s;
        if (n == 0 || num_weights == 0 || dim == 0) throw Unsupported("empty embedding backward");
        // The CPU adds rows one at a time in the gradient's own type
        // (grad_weight[k].add_(grad[i])); the scatter rounds each update the same way.
        const DType c = d;
        Value g = L.b.reshape(grad, {n, dim});
        Value idx = L.b.reshape(L.convert(indices, DType::kI64), {n, 1});
        if (padding_idx >= 0) {
          Value pad = L.b.compare(
              Comparison::kEQ, L.b.broadcast_in_dim(L.b.reshape(idx, {n}), {n, dim}, {0}),
              L.b.broadcast_to(L.constant(static_cast<double>(padding_idx), DType::kI64),
                               {n, dim}));
          g = L.b.select(pad, L.full_like(g, 0.0), g);
        }
        Value zeros = L.b.broadcast_to(L.constant(0.0, c), {num_weights, dim});
        hlo::ScatterDims s;
        s.update_window_dims = {1};
        s.inserted_window_dims = {0};
        s.scatter_dims_to_operand_dims = {0};
        s.index_vector_dim = 1;
        Value out = L.b.scatter(zeros, idx, g, s, hlo::ScatterKind::kAdd);
        return {L.convert(out, L.out_dtype(0, d))};
      }));
}

}  // namespace vtrn::lowering
