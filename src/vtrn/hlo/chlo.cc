#include "vtrn/hlo/chlo.h"

#include <algorithm>
#include <cmath>
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

constexpr Unary kUnary[] = {
    {"chlo.square", square, false},      {"chlo.tan", tan, false},
    {"stablehlo.tan", tan, false},       {"chlo.sinh", sinh, false},
    {"chlo.cosh", cosh, false},          {"chlo.asinh", asinh, false},
    {"chlo.acosh", acosh, false},        {"chlo.atanh", atanh, false},
    {"chlo.erf", erf_f32, true},         {"chlo.erfc", erfc_f32, true},
    {"chlo.erf_inv", erf_inv_f32, true},
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

}  // namespace

bool is_decomposable(std::string_view name) {
  return name == "chlo.top_k" || find_unary(name) != nullptr;
}

std::string decomposable_names() {
  std::string s;
  for (const Unary& u : kUnary) s += std::string(u.name) + ", ";
  return s + "chlo.top_k";
}

std::vector<int> decompose_chlo(const ChloOp& op, Block& block) {
  Emitter e(block);
  for (int v : op.operands)
    if (v < 0 || v >= static_cast<int>(block.types.size())) fail(op, "undefined operand");
  if (op.name == "chlo.top_k") return top_k(op, e);
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
