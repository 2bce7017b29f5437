// Factories that compute their values: arange, linspace, eye, and pow with a scalar base.
//
// A factory's size comes from its arguments, so they are static (part of the signature): each
// distinct range compiles once, and the same range again is a cache hit. The values follow the
// CPU kernels (RangeFactories.cpp): arange computes start + step * i in the accumulate type
// (double for float32, float for the half types, int64 for integers); linspace computes in the
// result type from both ends (start + step * i below the halfway point, end - step * (n - 1 - i)
// above it). Arguments the CPU rejects are left to the CPU fallback, which raises its error.
#include <algorithm>
#include <cmath>

#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;

constexpr double kExactInt = 9007199254740992.0;  // 2^53: larger integers do not survive doubles

/// A static Scalar argument that must be exact as a double.
double static_value(Lowerer& L, int i) {
  const double v = L.real(i);
  if (std::fabs(v) > kExactInt)
    throw Unsupported(L.entry.name + ": an integer argument beyond 2^53 is left to the CPU");
  return v;
}

bool is_integral_scalar(Lowerer& L, int i) {
  const ArgSpec& a = L.arg(i);
  return a.kind == ArgKind::kFloat && !a.ints.empty() && a.ints[0] == 1;
}

/// arange.start_out(start, end, step, *, out): the out= tensor gives the dtype.
std::vector<Value> arange(Lowerer& L) {
  if (L.call.out_dtypes.empty()) throw Unsupported("arange without out=");
  const DType out = L.call.out_dtypes[0];
  L.require_claimed(out);
  const double start = static_value(L, 0), end = static_value(L, 1), step = static_value(L, 2);
  if (!(step > 0 || step < 0)) throw Unsupported("arange: step must be nonzero");
  if (!std::isfinite(start) || !std::isfinite(end)) throw Unsupported("arange: unsupported range");
  // The CPU's vectorized kernel steps float16/bfloat16 values in its own order of roundings
  // (arange(-3, 1000, 7) gives 486 where a rounded start + i * step gives 488): leave them to it
  // but for exact integers.
  // Integer values up to 256 are exact in both, so there the orders agree.
  if ((out == DType::kBF16 || out == DType::kF16) &&
      (start != std::trunc(start) || step != std::trunc(step) ||
       std::max(std::fabs(start), std::fabs(end)) > 256))
    throw Unsupported("arange of a half type beyond its exact integers");
  const bool integral = hlo::is_integer(out);
  // The CPU converts the bounds to the accumulate type first (integers truncate).
  const double xs = integral ? std::trunc(start) : start, xe = integral ? std::trunc(end) : end,
               xt = integral ? std::trunc(step) : step;
  if (integral && xt == 0) throw Unsupported("arange: step must be nonzero");
  if (!((xt > 0 && xe >= xs) || (xt < 0 && xe <= xs)))
    throw Unsupported("arange: upper bound and larger bound inconsistent with step sign");
  double size_d = 0;
  if (out == DType::kI64) {
    const auto s = static_cast<std::int64_t>(xs), e = static_cast<std::int64_t>(xe),
               t = static_cast<std::int64_t>(xt);
    const std::int64_t sgn = (t > 0) - (t < 0);
    size_d = static_cast<double>((e - s + t - sgn) / t);
  } else {
    size_d = std::ceil((end - start) / step);
  }
  if (!(size_d >= 0) || size_d > kExactInt) throw Unsupported("arange: invalid size");
  const auto n = static_cast<std::int64_t>(size_d);
  const DType acc = integral ? DType::kI64 : (out == DType::kF32 ? DType::kF64 : DType::kF32);
  Value i = L.b.iota(TensorType(acc, {n}), 0);
  Value v = L.b.add(L.b.broadcast_to(L.constant(xs, acc), {n}),
                    L.b.mul(L.b.broadcast_to(L.constant(xt, acc), {n}), i));
  return {L.convert(v, out)};
}

/// linspace.out(start, end, steps, *, out).
std::vector<Value> linspace(Lowerer& L) {
  if (L.call.out_dtypes.empty()) throw Unsupported("linspace without out=");
  const DType out = L.call.out_dtypes[0];
  L.require_claimed(out);
  const std::int64_t steps = L.integer(2);
  if (steps < 0) throw Unsupported("linspace: number of steps must be non-negative");
  const bool integral = hlo::is_integer(out);
  // The ends in the result type (an integer result truncates them), the step in float32 for a
  // float32 result and in double for an integer one.
  double start = static_value(L, 0), end = static_value(L, 1);
  if (integral) {
    start = std::trunc(start);
    end = std::trunc(end);
    // The CPU wraps the ends into the result type first (-2 is 254 in uint8).
    double lo = -9.2e18, hi = 9.2e18;
    if (out == DType::kU8) lo = 0, hi = 255;
    if (out == DType::kI8) lo = -128, hi = 127;
    if (out == DType::kI16) lo = -32768, hi = 32767;
    if (out == DType::kI32) lo = -2147483648.0, hi = 2147483647.0;
    if (std::min(start, end) < lo || std::max(start, end) > hi)
      throw Unsupported("linspace: ends outside the result type");
  }
  if (steps <= 1) {
    Value v = L.b.broadcast_to(L.constant(start, out), {steps});
    return {v};
  }
  const DType c = integral ? DType::kF64 : DType::kF32;
  Value first = L.constant(start, c), last = L.constant(end, c);
  Value step = L.b.div(L.b.sub(last, first), L.constant(static_cast<double>(steps - 1), c));
  const std::vector<std::int64_t> s{steps};
  Value i = L.b.iota(TensorType(c, s), 0);
  Value step_b = L.b.broadcast_to(step, s);
  Value low = L.b.add(L.b.broadcast_to(first, s), L.b.mul(step_b, i));
  Value from_end = L.b.sub(L.b.broadcast_to(L.constant(static_cast<double>(steps - 1), c), s), i);
  Value high = L.b.sub(L.b.broadcast_to(last, s), L.b.mul(step_b, from_end));
  Value below = L.b.compare(Comparison::kLT, i,
                            L.b.broadcast_to(L.constant(static_cast<double>(steps / 2), c), s));
  return {L.convert(L.b.select(below, low, high), out)};
}

/// eye.out(n, *, out) / eye.m_out(n, m, *, out).
std::vector<Value> eye(Lowerer& L) {
  if (L.call.out_dtypes.empty()) throw Unsupported("eye without out=");
  const DType out = L.call.out_dtypes[0];
  L.require_claimed(out);
  const std::int64_t n = L.integer(0);
  const std::int64_t m = L.arg(1).kind == ArgKind::kInt ? L.integer(1) : n;
  if (n < 0 || m < 0) throw Unsupported("eye: n and m must be non-negative");
  TensorType it(DType::kI64, {n, m});
  Value diag = L.b.compare(Comparison::kEQ, L.b.iota(it, 0), L.b.iota(it, 1));
  return {L.convert(diag, out)};
}

/// pow.Scalar(self: Scalar, exponent: Tensor): base ** exponent elementwise. A base of 1 gives
/// ones (even for a NaN exponent), as the CPU special-cases it.
std::vector<Value> pow_scalar_base(Lowerer& L) {
  Value e = L.tensor(1);
  const DType common = result_type({L.promotion(0), L.promotion(1)});
  L.require_claimed(common);
  const DType c = opmath(common);
  Value x = L.convert(e, c);
  Value base = L.b.broadcast_to(L.scalar(0, c), L.shape(x));
  Value y = L.b.binary(OpKind::kPower, base, x);
  Value one = L.full_like(y, 1.0);
  y = L.b.select(L.b.compare(Comparison::kEQ, base, one), one, y);
  return {L.convert(y, L.out_dtype(0, common))};
}

}  // namespace

void add_factory_lowerings(std::vector<OpLowering>& r) {
  OpLowering range = entry(floats_and_ints(), arange);
  range.static_scalars = {0, 1, 2};
  range.zero_size = true;
  add(r, {"arange.start_out"}, range);

  OpLowering lin =
      entry({DType::kF32, DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8}, linspace);
  lin.static_scalars = {0, 1};
  lin.zero_size = true;
  add(r, {"linspace.out"}, lin);

  OpLowering id = entry(all_types(), eye);
  id.zero_size = true;
  add(r, {"eye.out", "eye.m_out"}, id);

  OpLowering pw = entry(floats_and_ints(), pow_scalar_base);
  pw.zero_size = true;
  add(r, {"pow.Scalar", "pow.Scalar_out"}, pw);
}

}  // namespace vtrn::lowering
