// Normalizations: native_layer_norm and native_group_norm with their backwards. Each
// normalizes rows of a [M, K] view of its input (layer norm: the trailing normalized_shape;
// group norm: a sample's group of channels) with the population variance, in float32, as
// PyTorch's CPU kernels do:
//   mean = sum(x) / K,  rstd = 1 / sqrt(var + eps),  y = (x - mean) * rstd * weight + bias,
// and the input gradient, with g = dy * weight and xhat = (x - mean) * rstd,
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
// The saved mean and rstd have the input's type, or float32 when a bfloat16/float16 input has
// float32 parameters (the CPU kernel's "mixed type"). A float32 layer norm with float32
// parameters is instead one `custom_call @vtrn.aten_layer_norm`, computed in ATen's order
// (compiler/aten_layer_norm.h), so its output, mean and rstd are the CPU's bits; its backward
// one `custom_call @vtrn.aten_layer_norm_backward` (compiler/aten_layer_norm_backward.h).
#include "vtrn/compiler/aten_batch_norm.h"
#include "vtrn/compiler/aten_group_norm.h"
#include "vtrn/compiler/aten_layer_norm.h"
#include "vtrn/compiler/aten_layer_norm_backward.h"
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::ReduceKind;
using Dims = std::vector<std::int64_t>;

/// The type PyTorch's CPU kernels give the saved statistics.
DType stat_dtype(Lowerer& L, DType input, std::initializer_list<int> params) {
  if (opmath(input) == input) return input;
  for (int i : params)
    if (L.has(i) && L.dtype(L.tensor(i)) == DType::kF32) return DType::kF32;
  return input;
}

struct RowStats {
  Value mean, rstd;  // [M, 1]
};

/// Mean and 1/sqrt(var + eps) of the rows of |x| [M, K] (float32).
RowStats row_stats(Lowerer& L, Value x, double eps) {
  const Dims s = L.shape(x);
  const double inv_k = s[1] == 0 ? 0.0 : 1.0 / static_cast<double>(s[1]);
  Value scale = L.broadcast_to(L.constant(inv_k, DType::kF32), {s[0], 1});
  Value mean = L.b.mul(L.reduce(x, {1}, ReduceKind::kAdd, true), scale);
  Value centered = L.b.sub(x, L.broadcast_to(mean, s));
  Value var = L.reduce(L.b.mul(centered, centered), {1}, ReduceKind::kAdd, true);
  var = L.b.mul(var, scale);
  // 1 / sqrt(var + eps), as the CPU kernel writes it (not rsqrt).
  Value one = L.broadcast_to(L.constant(1.0, DType::kF32), {s[0], 1});
  Value rstd = L.b.div(
      one, L.b.unary(hlo::OpKind::kSqrt,
                     L.b.add(var, L.broadcast_to(L.constant(eps, DType::kF32), {s[0], 1}))));
  return {mean, rstd};
}

/// xhat = (x - mean) * rstd for rows |x| [M, K].
Value normalize_rows(Lowerer& L, Value x, Value mean, Value rstd) {
  const Dims s = L.shape(x);
  return L.b.mul(L.b.sub(x, L.broadcast_to(mean, s)), L.broadcast_to(rstd, s));
}

/// dx of rows: rstd * (g - mean(g) - xhat * mean(g * xhat)), all [M, K] but rstd [M, 1].
Value rows_input_grad(Lowerer& L, Value g, Value xhat, Value rstd) {
  const Dims s = L.shape(g);
  const double inv_k = s[1] == 0 ? 0.0 : 1.0 / static_cast<double>(s[1]);
  Value scale = L.broadcast_to(L.constant(inv_k, DType::kF32), {s[0], 1});
  Value mg = L.b.mul(L.reduce(g, {1}, ReduceKind::kAdd, true), scale);
  Value mgx = L.b.mul(L.reduce(L.b.mul(g, xhat), {1}, ReduceKind::kAdd, true), scale);
  Value inner = L.b.sub(L.b.sub(g, L.broadcast_to(mg, s)), L.b.mul(xhat, L.broadcast_to(mgx, s)));
  return L.b.mul(L.broadcast_to(rstd, s), inner);
}

Dims layer_stat_shape(const Dims& s, std::size_t normalized) {
  Dims out(s.begin(), s.end() - static_cast<std::ptrdiff_t>(normalized));
  out.resize(s.size(), 1);
  return out;
}

/// native_layer_norm of float32 |input| as rows [m, k] with float32 weight (argument 2) and
/// bias (3) where given, as ATen's CPU kernel computes it (compiler/aten_layer_norm.h); the
/// mean and rstd in |stat| shape.
std::vector<Value> aten_layer_norm(Lowerer& L, Value input, std::int64_t m, std::int64_t k,
                                   const Dims& stat) {
  compiler::AtenLayerNormConfig config;
  config.eps = static_cast<float>(L.real(4));
  config.gamma = L.has(2);
  config.beta = L.has(3);
  std::vector<Value> operands{L.b.reshape(input, {m, k})};
  if (config.gamma) operands.push_back(L.b.reshape(L.tensor(2), {k}));
  if (config.beta) operands.push_back(L.b.reshape(L.tensor(3), {k}));
  const std::vector<Value> r = L.b.custom_call(
      std::string(compiler::kAtenLayerNormTarget), std::move(operands),
      {TensorType(DType::kF32, {m, k}), TensorType(DType::kF32, {m}), TensorType(DType::kF32, {m})},
      compiler::aten_layer_norm_config(config));
  return {L.b.reshape(r[0], L.shape(input)), L.b.reshape(r[1], stat), L.b.reshape(r[2], stat)};
}

/// native_layer_norm_backward of float32 rows [m, k] (its arguments: grad_out, input, ..., mean,
/// rstd, weight?, bias?) with float32 parameters, as ATen's CPU kernel computes it
/// (compiler/aten_layer_norm_backward.h); the gradients |mask| asks for.
std::vector<Value> aten_layer_norm_backward(Lowerer& L, std::int64_t m, std::int64_t k,
                                            const Dims& mask) {
  const compiler::AtenLayerNormBackwardConfig config{L.has(5), L.has(6)};
  std::vector<Value> operands{L.b.reshape(L.tensor(0), {m, k}), L.b.reshape(L.tensor(1), {m, k}),
                              L.b.reshape(L.tensor(3), {m}), L.b.reshape(L.tensor(4), {m})};
  if (config.gamma) operands.push_back(L.b.reshape(L.tensor(5), {k}));
  const std::vector<Value> r = L.b.custom_call(
      std::string(compiler::kAtenLayerNormBackwardTarget), std::move(operands),
      {TensorType(DType::kF32, {m, k}), TensorType(DType::kF32, {k}), TensorType(DType::kF32, {k})},
      compiler::aten_layer_norm_backward_config(config));
  std::vector<Value> out(3, kUnchanged);
  if (mask[0]) out[0] = L.b.reshape(r[0], L.shape(L.tensor(1)));
  if (mask[1] && config.gamma) out[1] = L.b.reshape(r[1], L.shape(L.tensor(5)));
  if (mask[2] && config.beta) out[2] = L.b.reshape(r[2], L.shape(L.tensor(6)));
  return out;
}

/// Whether tensor argument |i| is absent or float32.
bool absent_or_f32(Lowerer& L, int i) { return !L.has(i) || L.dtype(L.tensor(i)) == DType::kF32; }

/// vtrn::batch_norm of float32 through ATen's kernel (compiler/aten_batch_norm.h).
std::vector<Value> aten_batch_norm(Lowerer& L) {
  compiler::AtenBatchNormConfig c;
  c.training = L.flag(5);
  c.momentum = L.real(6);
  c.eps = L.real(7);
  c.weight = L.has(1);
  c.bias = L.has(2);
  c.running = L.has(3);
  std::vector<Value> operands{L.tensor(0)};
  for (int i = 1; i <= 4; ++i)
    if (L.has(i)) operands.push_back(L.tensor(i));
  const TensorType x = L.b.type(L.tensor(0));
  const TensorType vector(DType::kF32, {x.dims[1]});
  std::vector<TensorType> results{x, vector, vector};
  if (c.running) results.insert(results.end(), {vector, vector});
  const std::vector<Value> r =
      L.b.custom_call(std::string(compiler::kAtenBatchNormTarget), std::move(operands), results,
                      compiler::aten_batch_norm_config(c, /*backward=*/false));
  return {r[0], r[1], r[2], c.running ? r[3] : kUnchanged, c.running ? r[4] : kUnchanged};
}

/// Batch norm's view of |input| [N, C, *]: [N, C, HW].
Dims channel_view(Lowerer& L, Value input) {
  const Dims s = L.shape(input);
  if (s.size() < 2) throw Unsupported("batch_norm of rank < 2");
  std::int64_t hw = 1;
  for (std::size_t i = 2; i < s.size(); ++i) hw *= s[i];
  return {s[0], s[1], hw};
}

/// A per-channel [C] float32 vector broadcast over [N, C, HW].
Value per_channel(Lowerer& L, Value v, const Dims& view) {
  return L.b.broadcast_in_dim(L.convert(v, DType::kF32), view, {1});
}

}  // namespace

void add_norm_lowerings(std::vector<OpLowering>& r) {
  // native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
  add(r, {"native_layer_norm"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value input = L.tensor(0);
        const DType d = L.dtype(input);
        L.require_claimed(d);
        const Dims normalized = L.ints(1);
        const auto [m, k] = normalized_rows(L, input, normalized, "layer_norm");
        const Dims s = L.shape(input);
        const bool f32_params = (!L.has(2) || L.dtype(L.tensor(2)) == DType::kF32) &&
                                (!L.has(3) || L.dtype(L.tensor(3)) == DType::kF32);
        if (d == DType::kF32 && f32_params && m > 0 && k > 0)
          return aten_layer_norm(L, input, m, k, layer_stat_shape(s, normalized.size()));
        Value x = L.b.reshape(L.convert(input, DType::kF32), {m, k});
        const RowStats st = row_stats(L, x, L.real(4));
        Value y = normalize_rows(L, x, st.mean, st.rstd);
        if (L.has(2))
          y = L.b.mul(y, L.b.broadcast_in_dim(L.b.reshape(L.convert(L.tensor(2), DType::kF32), {k}),
                                              {m, k}, {1}));
        if (L.has(3))
          y = L.b.add(y, L.b.broadcast_in_dim(L.b.reshape(L.convert(L.tensor(3), DType::kF32), {k}),
                                              {m, k}, {1}));
        const DType sd = stat_dtype(L, d, {2, 3});
        const Dims stat = layer_stat_shape(s, normalized.size());
        return {L.convert(L.b.reshape(y, s), d), L.convert(L.b.reshape(st.mean, stat), sd),
                L.convert(L.b.reshape(st.rstd, stat), sd)};
      }));
  // native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?,
  //   output_mask) -> (grad_input, grad_weight, grad_bias)
  add(r, {"native_layer_norm_backward"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value input = L.tensor(1);
        const DType d = L.dtype(input);
        L.require_claimed(d);
        const Dims normalized = L.ints(2);
        const auto [m, k] = normalized_rows(L, input, normalized, "layer_norm");
        const Dims mask = L.ints(7);
        if (mask.size() != 3) throw Unsupported("layer_norm output_mask");
        const bool f32_params = (!L.has(5) || L.dtype(L.tensor(5)) == DType::kF32) &&
                                (!L.has(6) || L.dtype(L.tensor(6)) == DType::kF32);
        if (d == DType::kF32 && f32_params && L.dtype(L.tensor(0)) == DType::kF32 &&
            L.dtype(L.tensor(3)) == DType::kF32 && L.dtype(L.tensor(4)) == DType::kF32 && m > 0 &&
            k > 0)
          return aten_layer_norm_backward(L, m, k, mask);
        Value x = L.b.reshape(L.convert(input, DType::kF32), {m, k});
        Value dy = L.b.reshape(L.convert(L.tensor(0), DType::kF32), {m, k});
        Value mean = L.b.reshape(L.convert(L.tensor(3), DType::kF32), {m, 1});
        Value rstd = L.b.reshape(L.convert(L.tensor(4), DType::kF32), {m, 1});
        Value xhat = normalize_rows(L, x, mean, rstd);
        std::vector<Value> out(3, kUnchanged);
        if (mask[0]) {
          Value g = dy;
          if (L.has(5))
            g = L.b.mul(g, L.b.broadcast_in_dim(
                               L.b.reshape(L.convert(L.tensor(5), DType::kF32), {k}), {m, k}, {1}));
          out[0] = L.convert(L.b.reshape(rows_input_grad(L, g, xhat, rstd), L.shape(input)), d);
        }
        if (mask[1] && L.has(5)) {
          Value w = L.tensor(5);
          out[1] = L.convert(
              L.b.reshape(L.reduce(L.b.mul(dy, xhat), {0}, ReduceKind::kAdd, false), L.shape(w)),
              L.dtype(w));
        }
        if (mask[2] && L.has(6)) {
          Value b = L.tensor(6);
          out[2] = L.convert(L.b.reshape(L.reduce(dy, {0}, ReduceKind::kAdd, false), L.shape(b)),
                             L.dtype(b));
        }
        return out;
      }));

  // native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd)
  add(r, {"native_group_norm"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value input = L.tensor(0);
        const DType d = L.dtype(input);
        L.require_claimed(d);
        const std::int64_t n = L.integer(3), c = L.integer(4), hw = L.integer(5), g = L.integer(6);
        if (g < 1 || c % g != 0 || n * c * hw != [&] {
              std::int64_t e = 1;
              for (std::int64_t s : L.shape(input)) e *= s;
              return e;
            }())
          throw Unsupported("group_norm sizes (PyTorch's kernel reports them)");
        if (d == DType::kF32 && absent_or_f32(L, 1) && absent_or_f32(L, 2) && L.rank(input) >= 2 &&
            L.shape(input)[0] == n && L.shape(input)[1] == c) {
          // ATen's kernel (compiler/aten_group_norm.h), which rounds as the CPU does.
          compiler::AtenGroupNormConfig config{g, L.real(7), L.has(1), L.has(2)};
          std::vector<Value> operands{input};
          if (L.has(1)) operands.push_back(L.tensor(1));
          if (L.has(2)) operands.push_back(L.tensor(2));
          const TensorType stats(DType::kF32, {n, g});
          const std::vector<Value> r = L.b.custom_call(
              std::string(compiler::kAtenGroupNormTarget), std::move(operands),
              {L.b.type(input), stats, stats}, compiler::aten_group_norm_config(config, false));
          return {r[0], r[1], r[2]};
        }
        Value x = L.b.reshape(L.convert(input, DType::kF32), {n * g, c / g * hw});
        const RowStats st = row_stats(L, x, L.real(7));
        Value y = L.b.reshape(normalize_rows(L, x, st.mean, st.rstd), {n, c, hw});
        if (L.has(1))
          y = L.b.mul(y,
                      L.b.broadcast_in_dim(L.convert(L.tensor(1), DType::kF32), {n, c, hw}, {1}));
        if (L.has(2))
          y = L.b.add(y,
                      L.b.broadcast_in_dim(L.convert(L.tensor(2), DType::kF32), {n, c, hw}, {1}));
        const DType sd = stat_dtype(L, d, {1, 2});
        return {L.convert(L.b.reshape(y, L.shape(input)), d),
                L.convert(L.b.reshape(st.mean, {n, g}), sd),
                L.convert(L.b.reshape(st.rstd, {n, g}), sd)};
      }));
  // native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW, group,
  //   output_mask) -> (grad_input, grad_weight, grad_bias)
  add(r, {"native_group_norm_backward"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value input = L.tensor(1);
        const DType d = L.dtype(input);
        L.require_claimed(d);
        const std::int64_t n = L.integer(5), c = L.integer(6), hw = L.integer(7), g = L.integer(8);
        if (g < 1 || c % g != 0) throw Unsupported("group_norm sizes");
        const Dims mask = L.ints(9);
        if (mask.size() != 3) throw Unsupported("group_norm output_mask");
        const Dims s = L.shape(input);
        // (A bias without a weight takes the formula: ATen's kernel makes its parameter gradients
        // like the weight and gives none, and the CPU's call raises.)
        if (d == DType::kF32 && L.dtype(L.tensor(0)) == DType::kF32 && absent_or_f32(L, 4) &&
            (L.has(4) || !mask[2]) && L.dtype(L.tensor(2)) == DType::kF32 &&
            L.dtype(L.tensor(3)) == DType::kF32 && s.size() >= 2 && s[0] == n && s[1] == c &&
            L.b.type(L.tensor(2)).num_elements() == n * g &&
            L.b.type(L.tensor(3)).num_elements() == n * g) {
          // ATen's kernel (compiler/aten_group_norm.h), which rounds as the CPU does.
          const compiler::AtenGroupNormConfig config{g, 0.0, L.has(4), false};
          const TensorType stats(DType::kF32, {n, g}), vector(DType::kF32, {c});
          std::vector<Value> operands{L.tensor(0), input, L.b.reshape(L.tensor(2), {n, g}),
                                      L.b.reshape(L.tensor(3), {n, g})};
          if (L.has(4)) operands.push_back(L.tensor(4));
          const std::vector<Value> r = L.b.custom_call(
              std::string(compiler::kAtenGroupNormBackwardTarget), std::move(operands),
              {L.b.type(input), vector, vector}, compiler::aten_group_norm_config(config, true));
          std::vector<Value> out(3, kUnchanged);
          for (std::size_t i = 0; i < 3; ++i)
            if (mask[i]) out[i] = r[i];
          return out;
        }
        const std::int64_t rows = n * g, k = c / g * hw;
        Value x = L.b.reshape(L.convert(input, DType::kF32), {rows, k});
        Value dy = L.b.reshape(L.convert(L.tensor(0), DType::kF32), {n, c, hw});
        Value mean = L.b.reshape(L.convert(L.tensor(2), DType::kF32), {rows, 1});
        Value rstd = L.b.reshape(L.convert(L.tensor(3), DType::kF32), {rows, 1});
        Value xhat = normalize_rows(L, x, mean, rstd);
        std::vector<Value> out(3, kUnchanged);
        if (mask[0]) {
          Value gw = dy;
          if (L.has(4))
            gw = L.b.mul(
                gw, L.b.broadcast_in_dim(L.convert(L.tensor(4), DType::kF32), {n, c, hw}, {1}));
          Value dx = rows_input_grad(L, L.b.reshape(gw, {rows, k}), xhat, rstd);
          out[0] = L.convert(L.b.reshape(dx, L.shape(input)), d);
        }
        const DType pd = L.has(4) ? L.dtype(L.tensor(4)) : d;
        if (mask[1]) {
          Value prod = L.b.mul(dy, L.b.reshape(xhat, {n, c, hw}));
          out[1] = L.convert(L.reduce(prod, {0, 2}, ReduceKind::kAdd, false), pd);
        }
        if (mask[2]) out[2] = L.convert(L.reduce(dy, {0, 2}, ReduceKind::kAdd, false), pd);
        return out;
      }));

  // vtrn::batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum,
  //   eps) -> (out, mean, invstd, new_running_mean, new_running_var): native_batch_norm's
  // values (batch_norm.cpp writes the new running statistics into the old). Training uses the
  // batch's statistics over N and the spatial dims (the running variance takes the unbiased
  // one); evaluation the running ones.
  // float32 runs ATen's kernel (compiler/aten_batch_norm.h), which rounds as the CPU does.
  add(r, {"vtrn::batch_norm"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value input = L.tensor(0);
        const DType d = L.dtype(input);
        L.require_claimed(d);
        const Dims view = channel_view(L, input);
        if (d == DType::kF32 && absent_or_f32(L, 1) && absent_or_f32(L, 2) && absent_or_f32(L, 3) &&
            absent_or_f32(L, 4) && L.has(3) == L.has(4) && (L.flag(5) || L.has(3)))
          return aten_batch_norm(L);
        const bool training = L.flag(5);
        const double momentum = L.real(6), eps = L.real(7);
        const std::int64_t n = view[0] * view[2];
        Value x = L.b.reshape(L.convert(input, DType::kF32), view);
        const Dims cv{view[1]};
        auto vec = [&](double v) { return L.broadcast_to(L.constant(v, DType::kF32), cv); };
        Value mean, invstd, var;
        if (training) {
          mean = L.b.mul(L.reduce(x, {0, 2}, ReduceKind::kAdd, false), vec(1.0 / n));
          Value centered = L.b.sub(x, per_channel(L, mean, view));
          var = L.b.mul(L.reduce(L.b.mul(centered, centered), {0, 2}, ReduceKind::kAdd, false),
                        vec(1.0 / n));
        } else {
          if (!L.has(3) || !L.has(4))
            throw Unsupported("batch_norm evaluation without running stats");
          mean = L.convert(L.tensor(3), DType::kF32);
          var = L.convert(L.tensor(4), DType::kF32);
        }
        invstd = L.b.div(vec(1.0), L.b.unary(hlo::OpKind::kSqrt, L.b.add(var, vec(eps))));
        Value y = L.b.mul(L.b.sub(x, per_channel(L, mean, view)), per_channel(L, invstd, view));
        if (L.has(1)) y = L.b.mul(y, per_channel(L, L.tensor(1), view));
        if (L.has(2)) y = L.b.add(y, per_channel(L, L.tensor(2), view));
        const DType sd = stat_dtype(L, d, {1, 2, 3, 4});
        std::vector<Value> out{L.convert(L.b.reshape(y, L.shape(input)), d), L.convert(mean, sd),
                               L.convert(invstd, sd), kUnchanged, kUnchanged};
        if (training && L.has(3)) {
          Value rm = L.tensor(3);
          out[3] = L.convert(L.b.add(L.b.mul(L.convert(rm, DType::kF32), vec(1.0 - momentum)),
                                     L.b.mul(mean, vec(momentum))),
                             L.dtype(rm));
        }
        if (training && L.has(4)) {
          Value rv = L.tensor(4);
          const double unbias = n > 1 ? static_cast<double>(n) / static_cast<double>(n - 1) : 1.0;
          out[4] = L.convert(L.b.add(L.b.mul(L.convert(rv, DType::kF32), vec(1.0 - momentum)),
                                     L.b.mul(var, vec(momentum * unbias))),
                             L.dtype(rv));
        }
        return out;
      }));
  // native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?,
  //   save_mean?, save_invstd?, train, eps, output_mask) -> (grad_input, grad_weight, grad_bias)
  OpLowering batch_norm_backward = entry(floats(), [](Lowerer& L) -> std::vector<Value> {
    Value input = L.tensor(1);
    const DType d = L.dtype(input);
    L.require_claimed(d);
    const Dims view = channel_view(L, input);
    if (view[0] * view[1] * view[2] == 0 || L.b.type(L.tensor(0)).num_elements() == 0)
      throw Unsupported("empty batch_norm backward");
    const bool train = L.flag(7);
    const Dims mask = L.ints(9);
    if (mask.size() != 3) throw Unsupported("batch_norm output_mask");
    const Dims cv{view[1]};
    const std::int64_t n = view[0] * view[2];
    auto vec = [&](double v) { return L.broadcast_to(L.constant(v, DType::kF32), cv); };
    Value mean, invstd;
    if (train) {
      if (!L.has(5) || !L.has(6) || L.b.type(L.tensor(5)).num_elements() != view[1] ||
          L.b.type(L.tensor(6)).num_elements() != view[1])
        throw Unsupported("batch_norm backward without saved stats");
      mean = L.convert(L.tensor(5), DType::kF32);
      invstd = L.convert(L.tensor(6), DType::kF32);
    } else {
      if (!L.has(3) || !L.has(4)) throw Unsupported("batch_norm backward without running stats");
      mean = L.convert(L.tensor(3), DType::kF32);
      invstd = L.b.div(vec(1.0),
                       L.b.unary(hlo::OpKind::kSqrt,
                                 L.b.add(L.convert(L.tensor(4), DType::kF32), vec(L.real(8)))));
    }
    if (d == DType::kF32 && L.dtype(L.tensor(0)) == DType::kF32 && absent_or_f32(L, 2) &&
        L.dtype(train ? L.tensor(5) : L.tensor(3)) == DType::kF32 &&
        L.dtype(train ? L.tensor(6) : L.tensor(4)) == DType::kF32) {
      // ATen's kernel (compiler/aten_batch_norm.h), which rounds as the CPU does.
      compiler::AtenBatchNormConfig c;
      c.training = train;
      c.eps = L.real(8);
      c.weight = L.has(2);
      std::vector<Value> operands{L.tensor(0), input};
      if (c.weight) operands.push_back(L.tensor(2));
      operands.push_back(train ? L.tensor(5) : L.tensor(3));
      operands.push_back(train ? L.tensor(6) : L.tensor(4));
      const TensorType vector(DType::kF32, cv);
      const std::vector<Value> r =
          L.b.custom_call(std::string(compiler::kAtenBatchNormBackwardTarget), std::move(operands),
                          {L.b.type(input), vector, vector},
                          compiler::aten_batch_norm_config(c, /*backward=*/true));
      std::vector<Value> out(3, kUnchanged);
      for (std::size_t i = 0; i < 3; ++i)
        if (mask[i]) out[i] = r[i];
      return out;
    }
    Value x = L.b.reshape(L.convert(input, DType::kF32), view);
    Value dy = L.b.reshape(L.convert(L.tensor(0), DType::kF32), view);
    Value xhat = L.b.mul(L.b.sub(x, per_channel(L, mean, view)), per_channel(L, invstd, view));
    Value w = L.has(2) ? L.convert(L.tensor(2), DType::kF32) : vec(1.0);
    std::vector<Value> out(3, kUnchanged);
    if (mask[0]) {
      Value scale = L.b.mul(invstd, w);  // [C]
      Value dx;
      if (train) {
        Value mdy = L.b.mul(L.reduce(dy, {0, 2}, ReduceKind::kAdd, false), vec(1.0 / n));
        Value mdyx =
            L.b.mul(L.reduce(L.b.mul(dy, xhat), {0, 2}, ReduceKind::kAdd, false), vec(1.0 / n));
        dx = L.b.sub(L.b.sub(dy, per_channel(L, mdy, view)),
                     L.b.mul(xhat, per_channel(L, mdyx, view)));
        dx = L.b.mul(dx, per_channel(L, scale, view));
      } else {
        dx = L.b.mul(dy, per_channel(L, scale, view));
      }
      out[0] = L.convert(L.b.reshape(dx, L.shape(input)), d);
    }
    const DType pd = L.has(2) ? L.dtype(L.tensor(2)) : d;
    if (mask[1])
      out[1] = L.convert(L.reduce(L.b.mul(dy, xhat), {0, 2}, ReduceKind::kAdd, false), pd);
    if (mask[2]) out[2] = L.convert(L.reduce(dy, {0, 2}, ReduceKind::kAdd, false), pd);
    return out;
  });
  // Evaluation passes the empty saved statistics of the forward; it reads the running ones.
  batch_norm_backward.zero_size = true;
  add(r, {"native_batch_norm_backward"}, batch_norm_backward);
}

}  // namespace vtrn::lowering
