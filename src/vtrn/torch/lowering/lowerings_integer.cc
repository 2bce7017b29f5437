// Integer and bool arithmetic: the bitwise ops, floor_divide and remainder (Python's rounding
// and sign rules, as the CPU kernels compute them in BinaryOpsKernel.cpp).
//
// Integer division by zero raises on the CPU; here, as on an accelerator, it cannot be seen
// without reading the divisor back, so it gives the executor's result (XLA semantics) instead.
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;

using Fn = Value (*)(Lowerer&, Value, Value);

/// f(self, other) over the promoted, broadcast operands, in opmath.
LowerFn promoted(Fn f) {
  return [f](Lowerer& L) -> std::vector<Value> {
    const DType common = result_type({L.promotion(0), L.promotion(1)});
    L.require_claimed(common);
    // Each operand rounded to |common| first, as TensorIterator's promoted copy is: a Python
    // float divisor of a half tensor is a half (remainder(x, 2.3) divides by 2.30078125).
    auto v = L.broadcast({L.promoted(0, common), L.promoted(1, common)});
    return {L.convert(f(L, v[0], v[1]), L.out_dtype(0, common))};
  };
}

Value lt_zero(Lowerer& L, Value x) { return L.b.compare(Comparison::kLT, x, L.full_like(x, 0.0)); }
Value ne_zero(Lowerer& L, Value x) { return L.b.compare(Comparison::kNE, x, L.full_like(x, 0.0)); }

/// div_floor_floating / div_floor_integer of c10.
Value floor_divide(Lowerer& L, Value a, Value b) {
  const DType d = L.dtype(a);
  if (hlo::is_integer(d)) {
    Value q = L.b.div(a, b), r = L.b.binary(OpKind::kRemainder, a, b);
    if (hlo::is_unsigned(d)) return q;
    Value differ = L.b.binary(OpKind::kXor, lt_zero(L, a), lt_zero(L, b));
    Value adjust = L.b.binary(OpKind::kAnd, differ, ne_zero(L, r));
    return L.b.select(adjust, L.b.sub(q, L.full_like(q, 1.0)), q);
  }
  Value mod = L.b.binary(OpKind::kRemainder, a, b);
  Value div = L.b.div(L.b.sub(a, mod), b);
  Value fix = L.b.binary(OpKind::kAnd, ne_zero(L, mod),
                         L.b.compare(Comparison::kNE, lt_zero(L, b), lt_zero(L, mod)));
  div = L.b.select(fix, L.b.sub(div, L.full_like(div, 1.0)), div);
  Value fl = L.b.unary(OpKind::kFloor, div);
  Value up = L.b.compare(Comparison::kGT, L.b.sub(div, fl), L.full_like(div, 0.5));
  fl = L.b.select(up, L.b.add(fl, L.full_like(fl, 1.0)), fl);
  Value quotient = L.b.div(a, b);
  Value signed_zero = L.b.mul(quotient, L.full_like(quotient, 0.0));  // copysign(0, a / b)
  Value r = L.b.select(ne_zero(L, div), fl, signed_zero);
  // Division by zero: the IEEE quotient.
  return L.b.select(L.b.compare(Comparison::kEQ, b, L.full_like(b, 0.0)), quotient, r);
}

/// Python's modulus: the remainder takes the sign of the divisor.
Value remainder(Lowerer& L, Value a, Value b) {
  Value mod = L.b.binary(OpKind::kRemainder, a, b);
  if (hlo::is_unsigned(L.dtype(a))) return mod;
  Value fix = L.b.binary(OpKind::kAnd, ne_zero(L, mod),
                         L.b.compare(Comparison::kNE, lt_zero(L, mod), lt_zero(L, b)));
  return L.b.select(fix, L.b.add(mod, b), mod);
}

LowerFn bitwise(OpKind k) {
  return [k](Lowerer& L) -> std::vector<Value> {
    const DType common = result_type({L.promotion(0), L.promotion(1)});
    if (hlo::is_float(common)) throw Unsupported("bitwise op on floating-point operands");
    L.require_claimed(common);
    auto v = L.broadcast({L.convert(L.tensor(0), common), L.convert(L.tensor(1), common)});
    return {L.convert(L.b.binary(k, v[0], v[1]), L.out_dtype(0, common))};
  };
}

std::vector<DType> ints_and_bool() {
  std::vector<DType> v = integers();
  v.push_back(DType::kPred);
  return v;
}

OpLowering elementwise_entry(std::vector<DType> dtypes, LowerFn fn) {
  return zero_size_ok(entry(std::move(dtypes), std::move(fn), true));
}

}  // namespace

void add_integer_lowerings(std::vector<OpLowering>& r) {
  add(r, {"bitwise_and.Tensor", "bitwise_and_.Tensor", "bitwise_and.Tensor_out"},
      elementwise_entry(ints_and_bool(), bitwise(OpKind::kAnd)));
  add(r, {"bitwise_or.Tensor", "bitwise_or_.Tensor", "bitwise_or.Tensor_out"},
      elementwise_entry(ints_and_bool(), bitwise(OpKind::kOr)));
  add(r, {"bitwise_xor.Tensor", "bitwise_xor_.Tensor", "bitwise_xor.Tensor_out"},
      elementwise_entry(ints_and_bool(), bitwise(OpKind::kXor)));
  add(r, {"bitwise_not", "bitwise_not_", "bitwise_not.out"},
      elementwise_entry(ints_and_bool(), [](Lowerer& L) -> std::vector<Value> {
        Value x = L.tensor(0);
        L.require_claimed(L.dtype(x));
        return {L.convert(L.b.unary(OpKind::kNot, x), L.out_dtype(0, L.dtype(x)))};
      }));
  add(r, {"floor_divide", "floor_divide_.Tensor", "floor_divide.out"},
      elementwise_entry(floats_and_ints(), promoted(floor_divide)));
  add(r,
      {"remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out", "remainder.Scalar_Tensor"},
      elementwise_entry(floats_and_ints(), promoted(remainder)));
}

}  // namespace vtrn::lowering
