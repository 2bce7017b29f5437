// Elementwise ATen ops: arithmetic, comparisons, unary math, activations and their backward
// formulas. Each computes in PyTorch's opmath type and rounds once, as the CPU kernels do.
#include <cmath>
#include <string>

#include "vtrn/compiler/aten_gelu.h"
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;

using BinaryFn = std::function<Value(Lowerer&, Value, Value)>;
using UnaryFn = std::function<Value(Lowerer&, Value)>;

std::int64_t numel(Lowerer& L, Value v) {
  std::int64_t n = 1;
  for (std::int64_t d : L.shape(v)) n *= d;
  return n;
}

/// How binary() reads `other`.
enum class Other {
  kPromoted,  ///< converted to the common dtype first, as TensorIterator's promoted copy
  /// mul/div: the CPU kernel reads a one-element `other` (a Python number, a 0-d or a
  /// broadcast size-1 tensor) of a float16/bfloat16 op in float32 from its own dtype, without
  /// rounding it to the common dtype (BinaryOpsKernel.cpp's original_scalar_value).
  kOneElementUnrounded,
};

/// out = f(self, other) over the promoted, broadcast operands, computed in opmath.
/// |true_division|: integer inputs compute (and return) the default dtype.
LowerFn binary(BinaryFn f, bool true_division = false, Other read_other = Other::kPromoted) {
  return [f, true_division, read_other](Lowerer& L) -> std::vector<Value> {
    DType common = L.result_type({L.promotion(0), L.promotion(1)});
    if (true_division && !hlo::is_float(common)) common = L.call.default_float;
    L.require_claimed(common);
    L.check_fits(1, common);  // a checked Scalar `other` (clamp_min's bound)
    const DType compute = opmath(common);
    const bool unrounded = read_other == Other::kOneElementUnrounded && compute != common &&
                           numel(L, L.tensor(1)) == 1;
    Value other = unrounded ? L.convert(L.tensor(1), compute) : L.promoted(1, common);
    auto v = L.broadcast({L.promoted(0, common), other});
    return {L.convert(f(L, v[0], v[1]), L.out_dtype(0, common))};
  };
}

/// self + alpha * other (sub: self - alpha * other).
LowerFn add_like(bool subtract) {
  return [subtract](Lowerer& L) -> std::vector<Value> {
    const PromotionInput self = L.promotion(0), other = L.promotion(1);
    // sub_check: the CPU refuses bool operands (with its own message).
    if (subtract && (self.dtype == DType::kPred || other.dtype == DType::kPred))
      throw Unsupported("sub of a bool tensor");
    const DType common = L.result_type({self, other});
    L.require_claimed(common);
    const DType compute = opmath(common);
    // alpha_check: a float alpha for an integer result, or a bool alpha for a non-bool one.
    if (L.has(2) && L.arg(2).kind == ArgKind::kScalar) {
      const DType alpha = L.arg(2).types.at(0).dtype;
      if ((hlo::is_float(alpha) && !hlo::is_float(common)) ||
          (alpha == DType::kPred && common != DType::kPred))
        throw Unsupported("alpha of another category than the result");
    }
    L.check_fits(2, common);  // alpha.to<scalar_t>()
    auto v = L.broadcast({L.promoted(0, common), L.promoted(1, common)});
    // alpha is absent when a foreach overload without it (_foreach_add.Scalar) reuses this. The
    // CPU kernel reads it in the common dtype (alpha.to<scalar_t>()).
    if (!L.has(2))
      return {
          L.convert(subtract ? L.b.sub(v[0], v[1]) : L.b.add(v[0], v[1]), L.out_dtype(0, common))};
    Value alpha = L.broadcast_to(L.convert(L.scalar(2, common), compute), L.shape(v[1]));
    Value r;
    if (hlo::is_float(compute)) {
      // The CPU's float kernel is vec::fmadd(other, alpha, self), rounded once; sub is add with
      // -alpha (negating is exact).
      r = L.b.fma(v[1], subtract ? L.b.neg(alpha) : alpha, v[0]);
    } else {
      Value scaled = L.b.mul(v[1], alpha);
      r = subtract ? L.b.sub(v[0], scaled) : L.b.add(v[0], scaled);
    }
    return {L.convert(r, L.out_dtype(0, common))};
  };
}

LowerFn compare(Comparison dir) {
  return [dir](Lowerer& L) -> std::vector<Value> {
    const DType common = L.result_type({L.promotion(0), L.promotion(1)});
    L.require_claimed(common);
    auto v = L.broadcast({L.convert(L.tensor(0), common), L.convert(L.tensor(1), common)});
    return {L.convert(L.b.compare(dir, v[0], v[1]), L.out_dtype(0, DType::kPred))};
  };
}

/// Unary op on floats; integer and bool inputs compute in the default dtype (sqrt(int) is
/// float). |f| is given the result's dtype too.
LowerFn unary_float_of(std::function<Value(Lowerer&, Value, DType)> f) {
  return [f](Lowerer& L) -> std::vector<Value> {
    const DType in = L.dtype(L.tensor(0));
    const DType result = hlo::is_float(in) ? in : L.call.default_float;
    L.require_claimed(in);
    L.require_claimed(result);
    Value x = L.convert(L.tensor(0), opmath(result));
    return {L.convert(f(L, x, result), L.out_dtype(0, result))};
  };
}

LowerFn unary_float(UnaryFn f) {
  return unary_float_of([f](Lowerer& L, Value x, DType) { return f(L, x); });
}

/// exp, log, sqrt, sin, cos, tanh. float32 computes as ATen's own kernel for the op does
/// (hlo::Op::vml: MKL's VML, whose results differ from SLEEF's in the last bit and whose sqrt
/// is not correctly rounded); the reduced types compute in float32 as ATen's vectorized loops
/// do, and so does the same function inside other ops (sigmoid's exp, rsqrt's sqrt).
LowerFn unary_aten_vml(OpKind k) {
  return unary_float_of([k](Lowerer& L, Value x, DType result) {
    return result == DType::kF32 ? L.b.vml_unary(k, x) : L.b.unary(k, x);
  });
}

/// Unary op that keeps integer types (neg, abs).
LowerFn unary_same(UnaryFn f) {
  return [f](Lowerer& L) -> std::vector<Value> {
    const DType in = L.dtype(L.tensor(0));
    L.require_claimed(in);
    return {L.convert(f(L, L.convert(L.tensor(0), opmath(in))), L.out_dtype(0, in))};
  };
}

Value one_like(Lowerer& L, Value x) { return L.full_like(x, 1.0); }

/// 1 / (1 + exp(-x)), as the CPU kernel computes it.
Value sigmoid(Lowerer& L, Value x) {
  return L.b.div(one_like(L, x), L.b.add(one_like(L, x), L.b.exp(L.b.neg(x))));
}

/// The float classification ops (isneginf, isnan, ...): bool results; integers are never hit.
LowerFn classify(std::function<Value(Lowerer&, Value)> f) {
  return [f](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    L.require_claimed(L.dtype(x));
    Value r = hlo::is_float(L.dtype(x)) ? f(L, L.convert(x, opmath(L.dtype(x))))
                                        : L.b.broadcast_to(L.constant(0, DType::kPred), L.shape(x));
    return {L.convert(r, L.out_dtype(0, DType::kPred))};
  };
}

Value is_true(Lowerer& L, Value x) {
  if (L.dtype(x) == DType::kPred) return x;
  return L.b.compare(Comparison::kNE, x, L.full_like(x, 0.0));
}

/// erf(x) for float32, by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7): StableHLO
/// has no erf op, and the exact GELU needs it.
Value erf(Lowerer& L, Value x) {
  auto k = [&](double v) { return L.full_like(x, v); };
  Value a = L.b.unary(OpKind::kAbs, x);
  Value t = L.b.div(k(1.0), L.b.add(k(1.0), L.b.mul(k(0.3275911), a)));
  Value poly = k(1.061405429);
  for (double c : {-1.453152027, 1.421413741, -0.284496736, 0.254829592})
    poly = L.b.add(L.b.mul(poly, t), k(c));
  poly = L.b.mul(poly, t);
  Value y = L.b.sub(k(1.0), L.b.mul(poly, L.b.exp(L.b.neg(L.b.mul(a, a)))));
  return L.b.select(L.b.compare(Comparison::kLT, x, k(0.0)), L.b.neg(y), y);
}

/// torch's GELU of float32 (x), or its gradient (dy, x), exact or |tanh|-approximated, by
/// ATen's own kernel (compiler/aten_gelu.h).
Value aten_gelu(Lowerer& L, std::vector<Value> operands, bool tanh) {
  const bool backward = operands.size() == 2;
  const TensorType t = L.b.type(operands.back());
  const std::string_view target =
      tanh ? (backward ? compiler::kAtenGeluTanhBackwardTarget : compiler::kAtenGeluTanhTarget)
           : (backward ? compiler::kAtenGeluBackwardTarget : compiler::kAtenGeluTarget);
  return L.b.custom_call(std::string(target), std::move(operands), {t}, "")[0];
}

constexpr double kSqrt1_2 = 0.70710678118654752440;  // 1/sqrt(2)
constexpr double kBeta = 0.79788456080286535588;     // sqrt(2/pi)
constexpr double kKappa = 0.044715;

bool tanh_gelu(Lowerer& L, int arg) {
  if (!L.has(arg)) return false;
  const std::string& mode = L.arg(arg).text;
  if (mode == "tanh") return true;
  if (mode == "none") return false;
  throw Unsupported("gelu approximate=" + mode);
}

}  // namespace

void add_elementwise_lowerings(std::vector<OpLowering>& r) {
  // gelu(self, approximate): x * Phi(x), or the tanh approximation, as ATen's CPU kernel.
  add(r, {"gelu", "gelu_", "gelu.out"},
      entry(
          floats(),
          [](Lowerer& L) -> std::vector<Value> {
            const DType d = L.dtype(L.tensor(0));
            L.require_claimed(d);
            if (d == DType::kF32 && L.out_dtype(0, d) == DType::kF32)
              return {aten_gelu(L, {L.tensor(0)}, tanh_gelu(L, 1))};
            Value x = L.convert(L.tensor(0), opmath(d));
            auto k = [&](double v) { return L.full_like(x, v); };
            Value y;
            const bool f32 = L.dtype(x) == DType::kF32;
            if (tanh_gelu(L, 1)) {
              // x + kappa * x^3 with the multiply-add fused, as torch's build of the kernel has it.
              Value cube = L.b.mul(L.b.mul(x, x), x);
              Value inner = L.b.mul(k(kBeta), f32 ? L.b.fma(k(kKappa), cube, x)
                                                  : L.b.add(x, L.b.mul(k(kKappa), cube)));
              y = L.b.mul(L.b.mul(k(0.5), x), L.b.add(k(1.0), L.b.unary(OpKind::kTanh, inner)));
            } else {
              y = L.b.mul(L.b.mul(x, k(0.5)), L.b.add(k(1.0), erf(L, L.b.mul(x, k(kSqrt1_2)))));
            }
            return {L.convert(y, L.out_dtype(0, d))};
          },
          true));
  // gelu_backward(grad_output, self, approximate).
  add(r, {"gelu_backward", "gelu_backward.grad_input"},
      entry(
          floats(),
          [](Lowerer& L) -> std::vector<Value> {
            const DType common = L.result_type({L.promotion(0), L.promotion(1)});
            L.require_claimed(common);
            auto v = L.broadcast({L.promoted(0, common), L.promoted(1, common)});
            Value g = v[0], x = v[1];
            if (common == DType::kF32 && L.out_dtype(0, common) == DType::kF32)
              return {aten_gelu(L, {g, x}, tanh_gelu(L, 2))};
            auto k = [&](double val) { return L.full_like(x, val); };
            Value dinput;
            if (tanh_gelu(L, 2)) {
              Value x_sq = L.b.mul(x, x);
              Value inner = L.b.mul(k(kBeta), L.b.add(x, L.b.mul(k(kKappa), L.b.mul(x_sq, x))));
              Value th = L.b.unary(OpKind::kTanh, inner);
              Value right = L.b.add(k(1.0), th);
              Value right_derivative =
                  L.b.mul(L.b.sub(k(1.0), L.b.mul(th, th)),
                          L.b.mul(k(kBeta), L.b.add(k(1.0), L.b.mul(k(3.0 * kKappa), x_sq))));
              dinput =
                  L.b.add(L.b.mul(k(0.5), right), L.b.mul(L.b.mul(k(0.5), x), right_derivative));
            } else {
              Value cdf = L.b.mul(k(0.5), L.b.add(k(1.0), erf(L, L.b.mul(x, k(kSqrt1_2)))));
              Value pdf = L.b.mul(L.b.exp(L.b.mul(k(-0.5), L.b.mul(x, x))),
                                  k(0.39894228040143267794));  // 1/sqrt(2 pi)
              dinput = L.b.add(cdf, L.b.mul(x, pdf));
            }
            return {L.convert(L.b.mul(g, dinput), L.out_dtype(0, common))};
          },
          true));

  const auto numeric = floats_and_ints();
  const auto any = all_types();

  add(r, {"add.Tensor", "add_.Tensor", "add.out"},
      with_checked_scalars(entry(numeric, add_like(false), true), {2}));
  add(r, {"sub.Tensor", "sub_.Tensor", "sub.out"},
      with_checked_scalars(entry(numeric, add_like(true), true), {2}));
  // bool * bool is logical and, as the CPU computes it.
  add(r, {"mul.Tensor", "mul_.Tensor", "mul.out"},
      entry(any,
            binary(
                [](Lowerer& L, Value a, Value b) {
                  return L.dtype(a) == DType::kPred ? L.b.binary(OpKind::kAnd, a, b)
                                                    : L.b.mul(a, b);
                },
                false, Other::kOneElementUnrounded),
            true));
  add(r, {"div.Tensor", "div_.Tensor", "div.out"},
      entry(numeric,
            binary([](Lowerer& L, Value a, Value b) { return L.b.div(a, b); }, true,
                   Other::kOneElementUnrounded),
            true));
  add(r, {"maximum", "maximum.out"},
      entry(numeric, binary([](Lowerer& L, Value a, Value b) { return L.b.max(a, b); }), true));
  add(r, {"minimum", "minimum.out"},
      entry(numeric, binary([](Lowerer& L, Value a, Value b) { return L.b.min(a, b); }), true));
  add(r, {"pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out"},
      entry(floats(),
            binary([](Lowerer& L, Value a, Value b) { return L.b.binary(OpKind::kPower, a, b); }),
            true));
  // pow(self, exponent): the exponent is static, because the CPU kernel special-cases it
  // (x*x, x*x*x, sqrt, rsqrt, 1/x, 1/(x*x)) and rounds the exponent to a half type; bfloat16
  // also rounds the intermediate product x*x. float32's 0.5 runs torch.sqrt's own kernel (MKL's
  // VML, which on some CPUs is not correctly rounded). float16 takes std::pow for +-0.5 rather
  // than sqrt. (Checked element by element against torch 2.13.)
  OpLowering pow_scalar = entry(
      floats(),
      [](Lowerer& L) -> std::vector<Value> {
        const DType common = L.result_type({L.promotion(0), L.promotion(1)});
        L.require_claimed(common);
        const DType c = opmath(common);
        const bool half = c != common;
        auto round = [&](Value v) {
          return common == DType::kBF16 ? L.convert(L.convert(v, common), c) : v;
        };
        Value x = L.convert(L.tensor(0), c);
        double e = L.real(1);
        // The CPU converts a half type's exponent to it and refuses a finite one beyond its
        // range ("value cannot be converted to type c10::Half without overflow").
        if (half && std::isfinite(e) &&
            std::fabs(e) > (common == DType::kF16 ? 65504.0 : 3.3895313892515355e38))
          throw Unsupported("pow: the exponent does not fit " + torch_dtype_name(common));
        if (half)
          e = hlo::Literal::scalar(common, e).get_double(0);  // the exponent in the tensor's type
        Value y;
        if (e == 1)
          y = x;
        else if (e == 0)
          y = L.full_like(x, 1.0);  // also for NaN, as std::pow
        else if (e == 2)
          y = L.b.mul(x, x);
        else if (e == 3)
          y = L.b.mul(round(L.b.mul(x, x)), x);
        else if (common == DType::kF16 && (e == 0.5 || e == -0.5))
          y = L.b.binary(OpKind::kPower, x, L.full_like(x, e));  // std::pow: pow(-inf, 0.5) = inf
        else if (e == 0.5 && common == DType::kF32)
          y = L.b.vml_unary(OpKind::kSqrt, x);  // torch.sqrt's kernel: MKL's, not always exact
        else if (e == 0.5)
          y = L.convert(L.b.unary(OpKind::kSqrt, L.convert(x, DType::kF64)), c);
        else if (e == -0.5)
          y = L.b.div(L.full_like(x, 1.0), L.b.unary(OpKind::kSqrt, x));
        else if (e == -1)
          y = L.b.div(L.full_like(x, 1.0), x);
        else if (e == -2)
          y = L.b.div(L.full_like(x, 1.0), round(L.b.mul(x, x)));
        else
          y = L.b.binary(OpKind::kPower, x, L.full_like(x, e));
        return {L.convert(y, L.out_dtype(0, common))};
      },
      true);
  pow_scalar.static_scalars = {1};
  add(r, {"pow.Tensor_Scalar", "pow_.Scalar", "pow.Tensor_Scalar_out"}, pow_scalar);

  const std::pair<const char*, Comparison> comparisons[] = {
      {"eq", Comparison::kEQ}, {"ne", Comparison::kNE}, {"lt", Comparison::kLT},
      {"le", Comparison::kLE}, {"gt", Comparison::kGT}, {"ge", Comparison::kGE}};
  for (const auto& [name, dir] : comparisons) {
    const std::string n = name;
    for (const std::string& overload : {".Tensor", ".Scalar", ".Tensor_out", ".Scalar_out"}) {
      OpLowering e = entry(any, compare(dir), true);
      e.name = n + overload;
      r.push_back(std::move(e));
    }
  }

  // logical_and/or(a, b): the CPU casts both operands to their common dtype first, so a 0-d
  // operand rounds there (bfloat16 1e-30 beside a float16 tensor becomes 0, hence false).
  auto logical = [](OpKind k) {
    return [k](Lowerer& L) -> std::vector<Value> {
      const DType common = L.result_type({L.promotion(0), L.promotion(1)});
      auto truth = [&](int i) {
        Value t = L.tensor(i);
        const DType d = L.dtype(t);
        // Only a narrowing between floats can turn a nonzero value into zero (a float64 common
        // type narrows nothing).
        if (hlo::is_float(d) && hlo::is_float(common) && d != common && common != DType::kF64)
          t = L.convert(t, common);
        return is_true(L, t);
      };
      auto v = L.broadcast({truth(0), truth(1)});
      return {L.convert(L.b.binary(k, v[0], v[1]), L.out_dtype(0, DType::kPred))};
    };
  };
  add(r, {"logical_and", "logical_and.out"}, entry(any, logical(OpKind::kAnd), true));
  add(r, {"logical_or", "logical_or.out"}, entry(any, logical(OpKind::kOr), true));
  add(r, {"logical_not", "logical_not.out"},
      entry(
          any,
          [](Lowerer& L) -> std::vector<Value> {
            return {L.convert(L.b.unary(OpKind::kNot, is_true(L, L.tensor(0))),
                              L.out_dtype(0, DType::kPred))};
          },
          true));

  add(r, {"where.self", "where.self_out"},
      zero_size_ok(entry(
          any,
          [](Lowerer& L) -> std::vector<Value> {
            const DType common = L.result_type({L.promotion(1), L.promotion(2)});
            L.require_claimed(common);
            const DType cond = L.dtype(L.tensor(0));
            if (cond != DType::kPred && cond != DType::kU8)
              throw Unsupported("where of a non-boolean condition");  // the CPU raises
            auto v = L.broadcast({is_true(L, L.tensor(0)), L.convert(L.tensor(1), common),
                                  L.convert(L.tensor(2), common)});
            return {L.convert(L.b.select(v[0], v[1], v[2]), L.out_dtype(0, common))};
          },
          true)));
  add(r, {"masked_fill.Scalar", "masked_fill_.Scalar", "masked_fill.Tensor", "masked_fill_.Tensor"},
      zero_size_ok(with_checked_scalars(
          entry(
              any,
              [](Lowerer& L) -> std::vector<Value> {
                Value self = L.tensor(0);
                const DType d = L.dtype(self);
                L.require_claimed(d);
                if (L.dtype(L.tensor(1)) != DType::kPred)
                  throw Unsupported("masked_fill of a non-boolean mask");  // the CPU raises
                L.check_fits(2, d);                                        // value.to<scalar_t>()
                Value mask = L.broadcast_to(is_true(L, L.tensor(1)), L.shape(self));
                Value fill = L.broadcast_to(L.scalar(2, d), L.shape(self));
                return {L.convert(L.b.select(mask, fill, self), L.out_dtype(0, d))};
              },
              true),
          {2})));

  // clamp(self, min?, max?): max(self, min) then min(., max), promoted with the bounds.
  add(r, {"clamp", "clamp_", "clamp.out", "clamp.Tensor", "clamp_.Tensor", "clamp.Tensor_out"},
      with_checked_scalars(entry(
                               numeric,
                               [](Lowerer& L) -> std::vector<Value> {
                                 std::vector<PromotionInput> p{L.promotion(0)};
                                 if (L.has(1)) p.push_back(L.promotion(1));
                                 if (L.has(2)) p.push_back(L.promotion(2));
                                 if (!L.has(1) && !L.has(2))
                                   throw Unsupported(
                                       "clamp: at least one of 'min' or 'max' must not be None");
                                 const DType common = L.result_type(p);
                                 L.require_claimed(common);
                                 L.check_fits(1, common);  // min.to<scalar_t>()
                                 L.check_fits(2, common);
                                 Value x = L.promoted(0, common);
                                 std::vector<Value> parts{x};
                                 if (L.has(1)) parts.push_back(L.promoted(1, common));
                                 if (L.has(2)) parts.push_back(L.promoted(2, common));
                                 parts = L.broadcast(parts);
                                 x = parts[0];
                                 std::size_t k = 1;
                                 if (L.has(1)) x = L.b.max(x, parts[k++]);
                                 if (L.has(2)) x = L.b.min(x, parts[k]);
                                 return {L.convert(x, L.out_dtype(0, common))};
                               },
                               true),
                           {1, 2}));
  add(r,
      {"clamp_min", "clamp_min_", "clamp_min.out", "clamp_min.Tensor", "clamp_min_.Tensor",
       "clamp_min.Tensor_out"},
      with_checked_scalars(
          entry(numeric, binary([](Lowerer& L, Value a, Value b) { return L.b.max(a, b); }), true),
          {1}));
  add(r,
      {"clamp_max", "clamp_max_", "clamp_max.out", "clamp_max.Tensor", "clamp_max_.Tensor",
       "clamp_max.Tensor_out"},
      with_checked_scalars(
          entry(numeric, binary([](Lowerer& L, Value a, Value b) { return L.b.min(a, b); }), true),
          {1}));

  // lerp as the CPU kernel: |w| < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w).
  add(r,
      {"lerp.Scalar", "lerp_.Scalar", "lerp.Scalar_out", "lerp.Tensor", "lerp_.Tensor",
       "lerp.Tensor_out"},
      entry(
          floats(),
          [](Lowerer& L) -> std::vector<Value> {
            const DType d = L.dtype(L.tensor(0));
            L.require_claimed(d);
            // lerp_meta: `end` (and a tensor weight) must have self's dtype; the CPU raises.
            if (L.dtype(L.tensor(1)) != d ||
                (L.arg(2).kind == ArgKind::kTensor && L.dtype(L.tensor(2)) != d))
              throw Unsupported("lerp of tensors of different dtypes");
            const DType c = opmath(d);
            auto v = L.broadcast(
                {L.convert(L.tensor(0), c), L.convert(L.tensor(1), c), L.convert(L.tensor(2), c)});
            // lerp_vec: fmadd(weight, diff, self) for a small weight, else
            // fmadd(weight - 1, diff, end), each rounded once.
            Value diff = L.b.sub(v[1], v[0]);
            Value low = L.b.fma(v[2], diff, v[0]);
            Value high = L.b.fma(L.b.sub(v[2], L.full_like(v[2], 1.0)), diff, v[1]);
            Value use_low =
                L.b.compare(Comparison::kLT, L.b.unary(OpKind::kAbs, v[2]), L.full_like(v[2], 0.5));
            return {L.convert(L.b.select(use_low, low, high), L.out_dtype(0, d))};
          },
          true));

  // addcmul: self + value * t1 * t2; addcdiv: self + value * t1 / t2.
  for (bool divide : {false, true}) {
    OpLowering e = entry(
        divide ? floats() : numeric,
        [divide](Lowerer& L) -> std::vector<Value> {
          const DType common = L.result_type({L.promotion(0), L.promotion(1), L.promotion(2)});
          L.require_claimed(common);
          const DType c = opmath(common);
          L.check_fits(3, c);  // value.to<opmath_t>()
          auto v =
              L.broadcast({L.promoted(0, common), L.promoted(1, common), L.promoted(2, common)});
          Value value = L.broadcast_to(L.scalar(3, c), L.shape(v[0]));
          // The CPU's kernels: self + value * t1 / t2, left to right (the division last);
          // self + value * t1 * t2 with the last multiply and the add fused in floats.
          Value scaled = L.b.mul(value, v[1]);
          Value r = divide             ? L.b.add(v[0], L.b.div(scaled, v[2]))
                    : hlo::is_float(c) ? L.b.fma(scaled, v[2], v[0])
                                       : L.b.add(v[0], L.b.mul(scaled, v[2]));
          return {L.convert(r, L.out_dtype(0, common))};
        },
        true);
    e.checked_scalars = {3};
    if (divide)
      add(r, {"addcdiv", "addcdiv_", "addcdiv.out"}, e);
    else
      add(r, {"addcmul", "addcmul_", "addcmul.out"}, e);
  }

  // Unary math.
  const std::pair<std::initializer_list<const char*>, UnaryFn> float_unary[] = {
      {{"log1p", "log1p_", "log1p.out"},
       [](Lowerer& L, Value x) { return L.b.unary(OpKind::kLog1p, x); }},
      {{"expm1", "expm1_", "expm1.out"},
       [](Lowerer& L, Value x) { return L.b.unary(OpKind::kExpm1, x); }},
      // 1 / sqrt(x), as the CPU computes it (the executor's rsqrt can differ in the last bit).
      {{"rsqrt", "rsqrt_", "rsqrt.out"},
       [](Lowerer& L, Value x) { return L.b.div(one_like(L, x), L.b.unary(OpKind::kSqrt, x)); }},
      {{"reciprocal", "reciprocal_", "reciprocal.out"},
       [](Lowerer& L, Value x) { return L.b.div(one_like(L, x), x); }},
      {{"sigmoid", "sigmoid_", "sigmoid.out"}, [](Lowerer& L, Value x) { return sigmoid(L, x); }},
      {{"silu", "silu_", "silu.out"},
       [](Lowerer& L, Value x) {
         return L.b.div(x, L.b.add(one_like(L, x), L.b.exp(L.b.neg(x))));
       }},
  };
  for (const auto& [names, f] : float_unary) add(r, names, entry(floats(), unary_float(f), true));
  add(r, {"exp", "exp_", "exp.out"}, entry(floats(), unary_aten_vml(OpKind::kExp), true));
  add(r, {"log", "log_", "log.out"}, entry(floats(), unary_aten_vml(OpKind::kLog), true));
  add(r, {"sqrt", "sqrt_", "sqrt.out"}, entry(floats(), unary_aten_vml(OpKind::kSqrt), true));
  add(r, {"sin", "sin_", "sin.out"}, entry(floats(), unary_aten_vml(OpKind::kSine), true));
  add(r, {"cos", "cos_", "cos.out"}, entry(floats(), unary_aten_vml(OpKind::kCosine), true));
  add(r, {"tanh", "tanh_", "tanh.out"}, entry(floats(), unary_aten_vml(OpKind::kTanh), true));

  add(r, {"neg", "neg_", "neg.out"},
      entry(numeric, unary_same([](Lowerer& L, Value x) { return L.b.neg(x); }), true));
  add(r, {"abs", "abs_", "abs.out"},
      entry(numeric, unary_same([](Lowerer& L, Value x) { return L.b.unary(OpKind::kAbs, x); }),
            true));
  // clamp_min(x, 0) as the CPU and CUDA compute it: x unless x < 0, so -0.0 and NaN pass through.
  add(r, {"relu", "relu_"},
      entry(numeric, unary_same([](Lowerer& L, Value x) {
              Value zero = L.full_like(x, 0.0);
              return L.b.select(L.b.compare(Comparison::kLT, x, zero), zero, x);
            }),
            true));

  add(r, {"isneginf", "isneginf.out"},
      entry(numeric, classify([](Lowerer& L, Value x) {
              return L.b.compare(Comparison::kEQ, x, L.full_like(x, -INFINITY));
            }),
            true));
  add(r, {"isposinf", "isposinf.out"},
      entry(numeric, classify([](Lowerer& L, Value x) {
              return L.b.compare(Comparison::kEQ, x, L.full_like(x, INFINITY));
            }),
            true));
  add(r, {"isnan"},
      entry(numeric,
            classify([](Lowerer& L, Value x) { return L.b.compare(Comparison::kNE, x, x); }),
            true));

  // Backward formulas of the activations, as the CPU kernels write them, with the multiply-adds
  // their x86 builds contract into one rounding (-mfma): silu's 1 + x * (1 - s) and tanh's
  // 1 - y * y.
  add(r, {"silu_backward", "silu_backward.grad_input"},
      entry(floats(), binary([](Lowerer& L, Value g, Value x) {
              Value s = sigmoid(L, x);
              Value one = one_like(L, x);
              return L.b.mul(L.b.mul(g, s), L.b.fma(x, L.b.sub(one, s), one));
            }),
            true));
  // float16 runs the CPU's scalar path in float16 arithmetic: (1 - y) and g * (1 - y) are
  // rounded to float16 before the last product.
  add(r, {"sigmoid_backward", "sigmoid_backward.grad_input"},
      entry(
          floats(),
          [](Lowerer& L) -> std::vector<Value> {
            const DType common = L.result_type({L.promotion(0), L.promotion(1)});
            L.require_claimed(common);
            const DType c = opmath(common);
            auto round = [&](Value v) {
              return common == DType::kF16 ? L.convert(L.convert(v, common), c) : v;
            };
            auto v = L.broadcast({L.promoted(0, common), L.promoted(1, common)});
            Value g = v[0], y = v[1];
            // g * (1 - y) * y, left to right.
            Value r = L.b.mul(round(L.b.mul(g, round(L.b.sub(one_like(L, y), y)))), y);
            return {L.convert(r, L.out_dtype(0, common))};
          },
          true));
  add(r, {"tanh_backward", "tanh_backward.grad_input"},
      entry(floats(), binary([](Lowerer& L, Value g, Value y) {
              return L.b.mul(g, L.b.fma(L.b.neg(y), y, one_like(L, y)));
            }),
            true));
  add(r, {"threshold_backward", "threshold_backward.grad_input"},
      with_checked_scalars(
          entry(
              numeric,
              [](Lowerer& L) -> std::vector<Value> {
                const DType common = L.result_type({L.promotion(0), L.promotion(1)});
                L.require_claimed(common);
                const DType c = opmath(common);
                L.check_fits(2, c);  // threshold.to<opmath_t>()
                auto v = L.broadcast({L.promoted(0, common), L.promoted(1, common)});
                Value below = L.b.compare(Comparison::kLE, v[1],
                                          L.broadcast_to(L.scalar(2, c), L.shape(v[1])));
                return {L.convert(L.b.select(below, L.full_like(v[0], 0.0), v[0]),
                                  L.out_dtype(0, common))};
              },
              true),
          {2}));
}

}  // namespace vtrn::lowering
