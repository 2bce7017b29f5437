#include "vtrn/hlo/chlo.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "vtrn/hlo/verify.h"

namespace vtrn::hlo {
namespace {

// Appends verified ops to a block; every helper works elementwise on values of one shape.
class Emitter {
 public:
  explicit Emitter(Block& b) : b_(b) {}

  std::vector<int> op(Op o, const std::vector<TensorType>* declared = nullptr) {
    std::vector<TensorType> in;
    for (int v : o.operands) in.push_back(b_.type(v));
    const std::vector<TensorType> out = infer_result_types(o, in, declared);
    for (const TensorType& t : out) o.results.push_back(b_.add_value(t));
    b_.ops.push_back(o);
    return o.results;
  }
  int un(OpKind k, int x) {
    Op o;
    o.kind = k;
    o.operands = {x};
    return op(std::move(o))[0];
  }
  int bin(OpKind k, int x, int y) {
    Op o;
    o.kind = k;
    o.operands = {x, y};
    return op(std::move(o))[0];
  }
  int add(int x, int y) { return bin(OpKind::kAdd, x, y); }
  int sub(int x, int y) { return bin(OpKind::kSubtract, x, y); }
  int mul(int x, int y) { return bin(OpKind::kMultiply, x, y); }
  int div(int x, int y) { return bin(OpKind::kDivide, x, y); }
  /// A splat constant of |like|'s type.
  int c(double v, int like) {
    Op o;
    o.kind = OpKind::kConstant;
    o.literal = Literal::splat_of(b_.type(like), v);
    return op(std::move(o))[0];
  }
  int cmp(Comparison d, int x, int y) {
    Op o;
    o.kind = OpKind::kCompare;
    o.operands = {x, y};
    o.comparison = d;
    o.compare_type = CompareType::kFloat;
    return op(std::move(o))[0];
  }
  int select(int p, int x, int y) {
    Op o;
    o.kind = OpKind::kSelect;
    o.operands = {p, x, y};
    return op(std::move(o))[0];
  }
  int clamp(double lo, int x, double hi) {
    Op o;
    o.kind = OpKind::kClamp;
    o.operands = {c(lo, x), x, c(hi, x)};
    return op(std::move(o))[0];
  }
  int convert(int x, DType d) {
    Op o;
    o.kind = OpKind::kConvert;
    o.operands = {x};
    std::vector<TensorType> t = {TensorType(d, b_.type(x).dims)};
    return op(std::move(o), &t)[0];
  }
  /// A splat constant of |like|'s (integer) type holding the low bytes of |bits|.
  int bits(std::int64_t v, int like) {
    Op o;
    o.kind = OpKind::kConstant;
    o.literal.type = b_.type(like);
    o.literal.data.resize(static_cast<std::size_t>(dtype_size(o.literal.type.dtype)));
    std::memcpy(o.literal.data.data(), &v, o.literal.data.size());
    o.literal.splat = o.literal.type.num_elements() != 1;
    return op(std::move(o))[0];
  }
  int icmp(Comparison d, int x, int y) {
    Op o;
    o.kind = OpKind::kCompare;
    o.operands = {x, y};
    o.comparison = d;
    o.compare_type = CompareType::kSigned;
    return op(std::move(o))[0];
  }
  int bitcast(int x, DType d) {
    Op o;
    o.kind = OpKind::kBitcastConvert;
    o.operands = {x};
    std::vector<TensorType> t = {TensorType(d, b_.type(x).dims)};
    return op(std::move(o), &t)[0];
  }
  /// |x| < inf: false for infinities and NaN.
  int is_finite(int x) { return cmp(Comparison::kLT, un(OpKind::kAbs, x), c(INFINITY, x)); }
  /// Horner's rule: coeffs[0] * x^(n-1) + ... + coeffs[n-1].
  int poly(int x, const std::vector<double>& coeffs) {
    int p = c(coeffs[0], x);
    for (std::size_t i = 1; i < coeffs.size(); ++i) p = add(mul(p, x), c(coeffs[i], x));
    return p;
  }
  Block& block() { return b_; }

 private:
  Block& b_;
};

// Eigen's float erf: x * alpha(x^2) / beta(x^2) on [-4, 4], clamped to [-1, 1].
int erf_f32(Emitter& e, int x) {
  x = e.clamp(-4.0, x, 4.0);
  const int x2 = e.mul(x, x);
  const int alpha = e.poly(x2, {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                                -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                                -1.60960333262415e-02});
  const int beta = e.poly(x2, {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                               -7.37332916720468e-03, -1.42647390514189e-02});
  return e.clamp(-1.0, e.div(e.mul(x, alpha), beta), 1.0);
}

// Cephes' float erfc: 1 - erf(x) for |x| < 1, else exp(-x^2) / |x| * P(1/x^2) (R for |x| >= 2),
// 0 where exp(-x^2) underflows, and 2 - erfc(-x) for negative x.
int erfc_f32(Emitter& e, int x) {
  const int ax = e.un(OpKind::kAbs, x);
  const int x2 = e.mul(x, x);
  const int nx2 = e.un(OpKind::kNegate, x2);
  const int scaled = e.div(e.un(OpKind::kExp, nx2), ax);
  const int y = e.div(e.c(1.0, x), x2);
  const int p = e.poly(y, {2.326819970068386e-2, -1.387039388740657e-1, 3.687424674597105e-1,
                           -5.824733027278666e-1, 6.210004621745983e-1, -4.944515323274145e-1,
                           3.404879937665872e-1, -2.741127028184656e-1, 5.638259427386472e-1});
  const int r = e.poly(y, {-1.047766399936249e+1, 1.297719955372516e+1, -7.495518717768503e+0,
                           2.921019019210786e+0, -1.015265279202700e+0, 4.218463358204948e-1,
                           -2.820767439740514e-1, 5.641895067754075e-1});
  int big = e.mul(scaled, e.select(e.cmp(Comparison::kLT, ax, e.c(2.0, x)), p, r));
  big = e.select(e.cmp(Comparison::kLT, nx2, e.c(-88.72283905206835, x)), e.c(0.0, x), big);
  big = e.select(e.cmp(Comparison::kLT, x, e.c(0.0, x)), e.sub(e.c(2.0, x), big), big);
  const int small = e.sub(e.c(1.0, x), erf_f32(e, x));
  return e.select(e.cmp(Comparison::kLT, ax, e.c(1.0, x)), small, big);
}

// Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems).
int erf_inv_f32(Emitter& e, int x) {
  const int w = e.un(OpKind::kNegate, e.un(OpKind::kLog1p, e.un(OpKind::kNegate, e.mul(x, x))));
  const int lt = e.cmp(Comparison::kLT, w, e.c(5.0, x));
  const int w_small = e.sub(w, e.c(2.5, x));
  const int w_big = e.sub(e.un(OpKind::kSqrt, w), e.c(3.0, x));
  const int p_small =
      e.poly(w_small, {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                       0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941});
  const int p_big =
      e.poly(w_big, {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682});
  const int r = e.mul(e.select(lt, p_small, p_big), x);
  const int one = e.cmp(Comparison::kEQ, e.un(OpKind::kAbs, x), e.c(1.0, x));
  return e.select(one, e.mul(x, e.c(INFINITY, x)), r);
}

using Fn = int (*)(Emitter&, int);

struct Unary {
  std::string_view name;
  Fn fn;
  bool needs_f32;  ///< the approximation is single precision: f64 is refused
};

int square(Emitter& e, int x) { return e.mul(x, x); }
int tan(Emitter& e, int x) { return e.div(e.un(OpKind::kSine, x), e.un(OpKind::kCosine, x)); }
// (expm1(x) - expm1(-x)) / 2 keeps small arguments exact.
int sinh(Emitter& e, int x) {
  const int d = e.sub(e.un(OpKind::kExpm1, x), e.un(OpKind::kExpm1, e.un(OpKind::kNegate, x)));
  return e.mul(d, e.c(0.5, x));
}
int cosh(Emitter& e, int x) {
  const int s = e.add(e.un(OpKind::kExp, x), e.un(OpKind::kExp, e.un(OpKind::kNegate, x)));
  return e.mul(s, e.c(0.5, x));
}
// sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2))).
int asinh(Emitter& e, int x) {
  const int ax = e.un(OpKind::kAbs, x);
  const int x2 = e.mul(x, x);
  const int root = e.add(e.c(1.0, x), e.un(OpKind::kSqrt, e.add(e.c(1.0, x), x2)));
  const int r = e.un(OpKind::kLog1p, e.add(ax, e.div(x2, root)));
  return e.mul(e.un(OpKind::kSign, x), r);
}
// log(x + sqrt((x - 1) (x + 1))).
int acosh(Emitter& e, int x) {
  const int root = e.un(OpKind::kSqrt, e.mul(e.sub(x, e.c(1.0, x)), e.add(x, e.c(1.0, x))));
  return e.un(OpKind::kLog, e.add(x, root));
}
// log1p(2x / (1 - x)) / 2.
int atanh(Emitter& e, int x) {
  const int q = e.div(e.add(x, x), e.sub(e.c(1.0, x), x));
  return e.mul(e.un(OpKind::kLog1p, q), e.c(0.5, x));
}

// The inverse trigonometric functions through atan2, as XLA's CHLO legalization writes them:
// asin(x) = 2 atan2(x, 1 + sqrt(1 - x^2)), acos(x) = 2 atan2(sqrt(1 - x^2), 1 + x) (pi at -1),
// atan(x) = atan2(x, 1).
int asin(Emitter& e, int x) {
  const int root = e.un(OpKind::kSqrt, e.sub(e.c(1.0, x), e.mul(x, x)));
  return e.mul(e.c(2.0, x), e.bin(OpKind::kAtan2, x, e.add(e.c(1.0, x), root)));
}
int acos(Emitter& e, int x) {
  const int root = e.un(OpKind::kSqrt, e.sub(e.c(1.0, x), e.mul(x, x)));
  const int r = e.mul(e.c(2.0, x), e.bin(OpKind::kAtan2, root, e.add(e.c(1.0, x), x)));
  return e.select(e.cmp(Comparison::kNE, x, e.c(-1.0, x)), r, e.c(M_PI, x));
}
int atan(Emitter& e, int x) { return e.bin(OpKind::kAtan2, x, e.c(1.0, x)); }

// The Lanczos approximation (g = 7, 8 terms) XLA uses for lgamma and digamma, with the
// reflection formula below 1/2.
constexpr double kLanczosG = 7.0;
constexpr double kLanczosBase = 0.99999999999980993227684700473478;
constexpr double kLanczosCoeffs[] = {
    676.520368121885098567009190444019, -1259.13921672240287047156078755283,
    771.3234287776530788486528258894,   -176.61502916214059906584551354,
    12.507343278686904814458936853,     -0.13857109526572011689554707,
    9.984369578019570859563e-6,         1.50563273514931155834e-7};

// z (x - 1, or -x where x < 1/2 is reflected) and log(t) with t = z + g + 1/2.
struct Lanczos {
  int reflect, z, t, log_t;
};
Lanczos lanczos(Emitter& e, int x) {
  Lanczos l;
  l.reflect = e.cmp(Comparison::kLT, x, e.c(0.5, x));
  l.z = e.select(l.reflect, e.un(OpKind::kNegate, x), e.sub(x, e.c(1.0, x)));
  l.t = e.add(l.z, e.c(kLanczosG + 0.5, x));
  l.log_t = e.add(e.c(std::log(kLanczosG + 0.5), x),
                  e.un(OpKind::kLog1p, e.div(l.z, e.c(kLanczosG + 0.5, x))));
  return l;
}

// lgamma(x) = log(sqrt(2 pi)) + (z + 1/2 - t / log t) log t + log(a(z)); reflected:
// log(pi) - log|sin(pi x)| - lgamma(1 - x); +inf at the poles and at +-inf.
int lgamma(Emitter& e, int x) {
  const Lanczos l = lanczos(e, x);
  int a = e.c(kLanczosBase, x);
  for (int i = 0; i < 8; ++i)
    a = e.add(a, e.div(e.c(kLanczosCoeffs[i], x), e.add(l.z, e.c(i + 1.0, x))));
  const int log_y =
      e.add(e.add(e.c(std::log(std::sqrt(2 * M_PI)), x),
                  e.mul(e.sub(e.add(l.z, e.c(0.5, x)), e.div(l.t, l.log_t)), l.log_t)),
            e.un(OpKind::kLog, a));
  const int ax = e.un(OpKind::kAbs, x);
  const int frac = e.sub(ax, e.un(OpKind::kFloor, ax));
  const int reduced =
      e.select(e.cmp(Comparison::kGT, frac, e.c(0.5, x)), e.sub(e.c(1.0, x), frac), frac);
  const int denom = e.un(OpKind::kLog, e.un(OpKind::kSine, e.mul(e.c(M_PI, x), reduced)));
  const int reflection =
      e.select(e.is_finite(denom), e.sub(e.sub(e.c(std::log(M_PI), x), denom), log_y),
               e.un(OpKind::kNegate, denom));
  const int r = e.select(l.reflect, reflection, log_y);
  return e.select(e.cmp(Comparison::kEQ, ax, e.c(INFINITY, x)), e.c(INFINITY, x), r);
}

// digamma(x) = log t + a'(z) / a(z) - g / t; reflected: digamma(1 - x) - pi cot(pi x); NaN at
// zero and the negative integers.
int digamma(Emitter& e, int x) {
  const Lanczos l = lanczos(e, x);
  int num = e.c(0.0, x), denom = e.c(kLanczosBase, x);
  for (int i = 0; i < 8; ++i) {
    const int d = e.add(l.z, e.c(i + 1.0, x));
    num = e.sub(num, e.div(e.c(kLanczosCoeffs[i], x), e.mul(d, d)));
    denom = e.add(denom, e.div(e.c(kLanczosCoeffs[i], x), d));
  }
  const int y = e.sub(e.add(l.log_t, e.div(num, denom)), e.div(e.c(kLanczosG, x), l.t));
  const int reduced = e.add(x, e.un(OpKind::kAbs, e.un(OpKind::kFloor, e.add(x, e.c(0.5, x)))));
  const int pix = e.mul(e.c(M_PI, x), reduced);
  const int cot = e.div(e.mul(e.c(M_PI, x), e.un(OpKind::kCosine, pix)), e.un(OpKind::kSine, pix));
  const int r = e.select(l.reflect, e.sub(y, cot), y);
  const int pole = e.bin(OpKind::kAnd, e.cmp(Comparison::kLE, x, e.c(0.0, x)),
                         e.cmp(Comparison::kEQ, x, e.un(OpKind::kFloor, x)));
  return e.select(pole, e.c(NAN, x), r);
}

constexpr Unary kUnary[] = {
    {"chlo.square", square, false},      {"chlo.tan", tan, false},
    {"stablehlo.tan", tan, false},       {"chlo.sinh", sinh, false},
    {"chlo.cosh", cosh, false},          {"chlo.asinh", asinh, false},
    {"chlo.acosh", acosh, false},        {"chlo.atanh", atanh, false},
    {"chlo.erf", erf_f32, true},         {"chlo.erfc", erfc_f32, true},
    {"chlo.erf_inv", erf_inv_f32, true}, {"chlo.asin", asin, false},
    {"chlo.acos", acos, false},          {"chlo.atan", atan, false},
    {"chlo.lgamma", lgamma, false},      {"chlo.digamma", digamma, false},
};

const Unary* find_unary(std::string_view name) {
  for (const Unary& u : kUnary)
    if (u.name == name) return &u;
  return nullptr;
}

[[noreturn]] void fail(const ChloOp& op, const std::string& what) {
  throw Error(op.name + ": " + what);
}

// chlo.top_k(x, k): the k largest along the last dim, descending, ties in index order, and
// their indices (i32): a stable descending sort of (x, iota) and a slice of both.
std::vector<int> top_k(const ChloOp& op, Emitter& e) {
  if (op.operands.size() != 1) fail(op, "expected one operand");
  const TensorType t = e.block().type(op.operands[0]);
  if (t.rank() < 1) fail(op, "operand has type " + t.str() + ", expected rank >= 1");
  const std::int64_t last = t.dims.back();
  if (op.k < 0 || op.k > last)
    fail(op, "k = " + std::to_string(op.k) + " must be between 0 and the last dimension (" +
                 std::to_string(last) + ") of " + t.str());
  const int dim = t.rank() - 1;
  Op iota;
  iota.kind = OpKind::kIota;
  iota.dimension = dim;
  std::vector<TensorType> it = {TensorType(DType::kI32, t.dims)};
  const int idx = e.op(std::move(iota), &it)[0];
  Op sort;
  sort.kind = OpKind::kSort;
  sort.operands = {op.operands[0], idx};
  sort.dimension = dim;
  sort.is_stable = true;
  sort.regions = {make_sort_region({t.dtype, DType::kI32}, 0, /*descending=*/true)};
  const std::vector<int> sorted = e.op(std::move(sort));
  std::vector<int> out;
  for (int v : sorted) {
    Op s;
    s.kind = OpKind::kSlice;
    s.operands = {v};
    s.start_indices.assign(static_cast<std::size_t>(t.rank()), 0);
    s.limit_indices = t.dims;
    s.limit_indices.back() = op.k;
    s.strides.assign(static_cast<std::size_t>(t.rank()), 1);
    out.push_back(e.op(std::move(s))[0]);
  }
  return out;
}

// chlo.next_after(x, y): the representable value after x towards y, on the bit patterns as XLA
// does: x's integer pattern +-1 (towards zero when y is smaller in magnitude or of the other
// sign), the smallest subnormal of y's sign from zero, y when x == y, NaN when either is NaN.
std::vector<int> next_after(const ChloOp& op, Emitter& e) {
  if (op.operands.size() != 2)
    fail(op, "expected two operands, got " + std::to_string(op.operands.size()));
  const int x = op.operands[0], y = op.operands[1];
  const TensorType t = e.block().type(x);
  if (e.block().type(y) != t)
    fail(op, "operand 1 has type " + e.block().type(y).str() + ", expected " + t.str());
  DType it = DType::kI32;
  if (t.dtype == DType::kF64)
    it = DType::kI64;
  else if (t.dtype == DType::kBF16 || t.dtype == DType::kF16)
    it = DType::kI16;
  else if (t.dtype != DType::kF32)
    fail(op, "operand has type " + t.str() + ", expected a real floating type");
  const int bits = 8 * dtype_size(t.dtype);
  const std::int64_t sign = std::int64_t{1} << (bits - 1);  // the pattern's sign bit
  const int xi = e.bitcast(x, it), yi = e.bitcast(y, it);
  const int sign_mask = e.bits(sign, xi), abs_mask = e.bits(~sign, xi), zero = e.bits(0, xi);
  const int ax = e.bin(OpKind::kAnd, xi, abs_mask), ay = e.bin(OpKind::kAnd, yi, abs_mask);
  const int x_sign = e.bin(OpKind::kAnd, xi, sign_mask),
            y_sign = e.bin(OpKind::kAnd, yi, sign_mask);
  const int smaller =
      e.bin(OpKind::kOr, e.icmp(Comparison::kGT, ax, ay), e.icmp(Comparison::kNE, x_sign, y_sign));
  int r = e.add(xi, e.select(smaller, e.bits(-1, xi), e.bits(1, xi)));
  const int from_zero =
      e.select(e.icmp(Comparison::kEQ, ay, zero), yi, e.bin(OpKind::kOr, y_sign, e.bits(1, xi)));
  r = e.select(e.icmp(Comparison::kEQ, ax, zero), from_zero, r);
  r = e.select(e.cmp(Comparison::kEQ, x, y), yi, r);
  const int nan = e.bin(OpKind::kOr, e.cmp(Comparison::kNE, x, x), e.cmp(Comparison::kNE, y, y));
  return {e.select(nan, e.c(NAN, x), e.bitcast(r, t.dtype))};
}

}  // namespace

// Shardy's placement hints: the identity on one device.
bool is_sdy_hint(std::string_view name) {
  return name == "sdy.sharding_constraint" || name == "sdy.reshard";
}

bool is_decomposable(std::string_view name) {
  return name == "chlo.top_k" || name == "chlo.next_after" || is_sdy_hint(name) ||
         find_unary(name) != nullptr;
}

std::string decomposable_names() {
  std::string s;
  for (const Unary& u : kUnary) s += std::string(u.name) + ", ";
  return s + "chlo.next_after, chlo.top_k, sdy.sharding_constraint, sdy.reshard";
}

std::vector<int> decompose_chlo(const ChloOp& op, Block& block) {
  Emitter e(block);
  for (int v : op.operands)
    if (v < 0 || v >= static_cast<int>(block.types.size())) fail(op, "undefined operand");
  if (is_sdy_hint(op.name)) {
    if (op.operands.size() != 1) fail(op, "expected one operand");
    return {op.operands[0]};
  }
  if (op.name == "chlo.top_k") return top_k(op, e);
  if (op.name == "chlo.next_after") return next_after(op, e);
  const Unary* u = find_unary(op.name);
  if (!u)
    throw Error("op '" + op.name + "' is not supported by vtrn (the CHLO ops it decomposes: " +
                decomposable_names() + ")");
  if (op.operands.size() != 1)
    fail(op, "expected one operand, got " + std::to_string(op.operands.size()));
  const int x = op.operands[0];
  const DType d = block.type(x).dtype;
  if (!is_float(d) || (u->needs_f32 && d == DType::kF64))
    fail(op, "operand has type " + block.type(x).str() + ", expected " +
                 (u->needs_f32 ? "f32, bf16 or f16 (the decomposition is single precision)"
                               : "a real floating type"));
  // Half types are computed in f32 and rounded once, as XLA does.
  if (d == DType::kBF16 || d == DType::kF16)
    return {e.convert(u->fn(e, e.convert(x, DType::kF32)), d)};
  return {u->fn(e, x)};
}

}  // namespace vtrn::hlo
