// RMS normalization: _fused_rms_norm (what torch.rms_norm / nn.RMSNorm call when the weight has
// the input's dtype) and its backward. PyTorch's CPU computes it as the composite
//   rstd = rsqrt(mean(x^2 over the trailing normalized_shape) + eps),  y = x * rstd * weight
// in float32 for float16/bfloat16 inputs (eps defaults to float32's epsilon), returns y in the
// input's type and rstd in float32 with the normalized dims kept as size 1. The backward, with
// xhat = x * rstd and g = dy * weight:
//   dx = rstd * (g - xhat * mean(g * xhat)),  dweight = sum over rows of dy * xhat.
#include <limits>

#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::ReduceKind;
using Dims = std::vector<std::int64_t>;

/// The weight as a float32 [M, K] broadcast, after checking it is |normalized|-shaped.
Value weight_rows(Lowerer& L, Value w, const Dims& normalized, std::int64_t m, std::int64_t k) {
  if (L.shape(w) != normalized) throw Unsupported("rms_norm weight shape");
  return L.b.broadcast_in_dim(L.b.reshape(L.convert(w, DType::kF32), {k}), {m, k}, {1});
}

Dims stat_shape(const Dims& s, std::size_t normalized) {
  Dims out(s.begin(), s.end() - static_cast<std::ptrdiff_t>(normalized));
  out.resize(s.size(), 1);
  return out;
}

/// 1 / sqrt(mean(x^2) + eps) of the rows of |x| [M, K], [M, 1].
Value row_rstd(Lowerer& L, Value x, double eps) {
  const Dims s = L.shape(x);
  Value ms = L.reduce(L.b.mul(x, x), {1}, ReduceKind::kAdd, true);
  ms = L.b.div(ms, L.broadcast_to(L.constant(static_cast<double>(s[1]), DType::kF32), {s[0], 1}));
  ms = L.b.add(ms, L.broadcast_to(L.constant(eps, DType::kF32), {s[0], 1}));
  return L.b.unary(hlo::OpKind::kRsqrt, ms);
}

}  // namespace

void add_rms_norm_lowerings(std::vector<OpLowering>& r) {
  // _fused_rms_norm(input, normalized_shape, weight?, eps?) -> (output, rstd)
  add(r, {"_fused_rms_norm"}, zero_size_ok(entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value input = L.tensor(0);
        const DType d = L.dtype(input);
        L.require_claimed(d);
        const Dims normalized = L.ints(1);
        const auto [m, k] = normalized_rows(L, input, normalized, "rms_norm");
        const double eps = L.has(3) ? L.real(3) : std::numeric_limits<float>::epsilon();
        Value x = L.b.reshape(L.convert(input, DType::kF32), {m, k});
        Value rstd = row_rstd(L, x, eps);
        Value y = L.b.mul(x, L.broadcast_to(rstd, {m, k}));
        if (L.has(2)) {
          if (L.dtype(L.tensor(2)) != d) throw Unsupported("rms_norm weight of another dtype");
          y = L.b.mul(y, weight_rows(L, L.tensor(2), normalized, m, k));
        }
        const Dims s = L.shape(input);
        return {L.convert(L.b.reshape(y, s), d),
                L.b.reshape(rstd, stat_shape(s, normalized.size()))};
      })));
  // _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight?, output_mask)
  //   -> (grad_input, grad_weight)
  add(r, {"_fused_rms_norm_backward"},
      zero_size_ok(entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value input = L.tensor(1);
        const DType d = L.dtype(input);
        L.require_claimed(d);
        const Dims normalized = L.ints(2);
        const auto [m, k] = normalized_rows(L, input, normalized, "rms_norm");
        const Dims mask = L.ints(5);
        if (mask.size() != 2) throw Unsupported("rms_norm output_mask");
        if (L.shape(L.tensor(0)) != L.shape(input)) throw Unsupported("rms_norm grad shape");
        Value x = L.b.reshape(L.convert(input, DType::kF32), {m, k});
        Value dy = L.b.reshape(L.convert(L.tensor(0), DType::kF32), {m, k});
        Value rstd = L.b.reshape(L.convert(L.tensor(3), DType::kF32), {m, 1});
        Value xhat = L.b.mul(x, L.broadcast_to(rstd, {m, k}));
        std::vector<Value> out(2, kUnchanged);
        if (mask[0]) {
          Value g = L.has(4) ? L.b.mul(dy, weight_rows(L, L.tensor(4), normalized, m, k)) : dy;
          Value mgx =
              L.b.div(L.reduce(L.b.mul(g, xhat), {1}, ReduceKind::kAdd, true),
                      L.broadcast_to(L.constant(static_cast<double>(k), DType::kF32), {m, 1}));
          Value dx = L.b.mul(L.broadcast_to(rstd, {m, k}),
                             L.b.sub(g, L.b.mul(xhat, L.broadcast_to(mgx, {m, k}))));
          out[0] = L.convert(L.b.reshape(dx, L.shape(input)), d);
        }
        if (mask[1] && L.has(4)) {
          Value w = L.tensor(4);
          out[1] = L.convert(
              L.b.reshape(L.reduce(L.b.mul(dy, xhat), {0}, ReduceKind::kAdd, false), L.shape(w)),
              L.dtype(w));
        }
        return out;
      })));
}

}  // namespace vtrn::lowering
