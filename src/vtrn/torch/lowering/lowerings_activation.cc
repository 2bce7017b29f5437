// Activations and their backwards that model zoos reach beyond the elementwise family:
// softplus (Mamba's time step) and native_dropout_backward (every dropout layer in training).
// Each is elementwise and computes as the CPU kernel writes it, in float32 for float16/bfloat16,
// rounded once:
//   softplus(x, beta, threshold)      = x * beta > threshold ? x : log1p(exp(x * beta)) / beta
//   softplus_backward(g, x, b, t)     = x * b > t ? g : g * z / (z + 1),  z = exp(x * b)
//   native_dropout_backward(g, m, s)  = g * m * s
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;

/// The float tensor argument |i| in its compute type, and its dtype.
std::pair<Value, DType> float_arg(Lowerer& L, int i) {
  Value x = L.tensor(i);
  const DType d = L.dtype(x);
  L.require_claimed(d);
  return {L.convert(x, opmath(d)), d};
}

/// x * beta > threshold, and x * beta, for softplus (beta and threshold are arguments |beta|
/// and |beta| + 1).
std::pair<Value, Value> softplus_parts(Lowerer& L, Value x, int beta) {
  const DType c = L.dtype(x);
  const auto s = L.shape(x);
  Value xb = L.b.mul(x, L.broadcast_to(L.scalar(beta, c), s));
  Value above = L.b.compare(Comparison::kGT, xb, L.broadcast_to(L.scalar(beta + 1, c), s));
  return {above, xb};
}

}  // namespace

void add_activation_lowerings(std::vector<OpLowering>& r) {
  // softplus(self, beta, threshold)
  add(r, {"softplus", "softplus.out"},
      zero_size_ok(entry(
          floats(),
          [](Lowerer& L) -> std::vector<Value> {
            auto [x, d] = float_arg(L, 0);
            auto [above, xb] = softplus_parts(L, x, 1);
            Value soft = L.b.div(L.b.unary(OpKind::kLog1p, L.b.exp(xb)),
                                 L.broadcast_to(L.scalar(1, L.dtype(x)), L.shape(x)));
            return {L.convert(L.b.select(above, x, soft), L.out_dtype(0, d))};
          },
          true)));
  // softplus_backward(grad_output, self, beta, threshold)
  add(r, {"softplus_backward", "softplus_backward.grad_input"},
      zero_size_ok(entry(
          floats(),
          [](Lowerer& L) -> std::vector<Value> {
            auto [x, d] = float_arg(L, 1);
            if (L.dtype(L.tensor(0)) != d || L.shape(L.tensor(0)) != L.shape(L.tensor(1)))
              throw Unsupported("softplus_backward operands of different types or shapes");
            Value g = L.convert(L.tensor(0), opmath(d));
            auto [above, xb] = softplus_parts(L, x, 2);
            Value z = L.b.exp(xb);
            Value scaled = L.b.div(L.b.mul(g, z), L.b.add(z, L.full_like(z, 1.0)));
            return {L.convert(L.b.select(above, g, scaled), L.out_dtype(0, d))};
          },
          true)));
  // native_dropout_backward(grad_output, mask, scale)
  add(r, {"native_dropout_backward", "native_dropout_backward.out"},
      zero_size_ok(entry(
          floats(),
          [](Lowerer& L) -> std::vector<Value> {
            auto [g, d] = float_arg(L, 0);
            Value mask = L.tensor(1);
            if (L.dtype(mask) != DType::kPred || L.shape(mask) != L.shape(g))
              throw Unsupported("native_dropout_backward mask");
            Value kept = L.b.mul(g, L.convert(mask, L.dtype(g)));  // NaN * 0 stays NaN
            Value out = L.b.mul(kept, L.full_like(g, L.real(2)));
            return {L.convert(out, L.out_dtype(0, d))};
          },
          true)));
}

}  // namespace vtrn::lowering
