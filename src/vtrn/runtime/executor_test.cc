// Every op against plain double-precision loops written here, in each dtype it supports.
// Ops that are exact in float32 (add, subtract, multiply, divide, sqrt, ...) must match the
// reference bit for bit: the float32 result is the double result rounded once, and bf16/f16
// results are that float32 rounded to nearest even (computed here by a nearest-value search).
#include "vtrn/runtime/executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "vtrn/hlo/builder.h"
#include "vtrn/runtime/kernels.h"

namespace vtrn::runtime {
namespace {

using hlo::Builder;
using hlo::DType;
using hlo::OpKind;
using hlo::TensorType;
using hlo::Value;
using Dims = std::vector<std::int64_t>;

// Round-to-nearest-even of |f| to bf16/f16, by searching the two neighbours in double.
double ref_round(DType d, double x) {
  if (d == DType::kF64) return x;
  const float f = static_cast<float>(x);
  if (d == DType::kF32 || std::isnan(f) || std::isinf(f)) return f;
  // Enumerate representable values around f: use the storage conversion's inverse only to list
  // candidates; the choice is made here by distance.
  auto value_of = [&](std::uint32_t bits) {
    return d == DType::kBF16 ? hlo::bf16_to_f32(static_cast<std::uint16_t>(bits))
                             : hlo::f16_to_f32(static_cast<std::uint16_t>(bits));
  };
  double best = 0;
  double best_dist = INFINITY;
  std::uint32_t best_bits = 0;
  // Binary search over the ordered non-negative encodings, then compare the two neighbours.
  const double a = std::fabs(static_cast<double>(f));
  std::uint32_t lo = 0, hi = d == DType::kBF16 ? 0x7F80 : 0x7C00;
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    (value_of(mid) <= a ? lo : hi) = mid;
  }
  for (std::uint32_t c : {lo, hi}) {
    const double v = value_of(c);
    const double dist = std::fabs(v - a);
    if (dist < best_dist || (dist == best_dist && (c & 1) == 0)) {
      best = v;
      best_dist = dist;
      best_bits = c;
    }
  }
  (void)best_bits;
  return std::signbit(f) ? -best : best;
}

std::vector<double> random_values(std::int64_t n, double lo, double hi, unsigned seed, DType d) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) {
    x = u(rng);
    if (hlo::is_integer(d)) x = std::round(x);
    std::uint8_t tmp[8];
    hlo::store_double(d, x, tmp);
    x = hlo::load_double(d, tmp);  // exactly representable in d
  }
  return v;
}

std::vector<HostTensor> run(const hlo::Module& m, const std::vector<HostTensor>& in,
                            bool fusion = true) {
  compiler::CompileOptions o;
  o.fusion = fusion;
  LoadedExecutable exe(compiler::compile(m, o));
  return exe.run(in);
}

struct UnaryCase {
  OpKind kind;
  bool exact;
  double lo, hi;
  std::function<double(double)> f;
};

const UnaryCase kUnary[] = {
    {OpKind::kAbs, true, -4, 4, [](double x) { return std::fabs(x); }},
    {OpKind::kNegate, true, -4, 4, [](double x) { return -x; }},
    {OpKind::kSign, true, -4, 4, [](double x) { return x > 0   ? 1.0
                                                       : x < 0 ? -1.0
                                                               : 0.0; }},
    {OpKind::kFloor, true, -4, 4, [](double x) { return std::floor(x); }},
    {OpKind::kCeil, true, -4, 4, [](double x) { return std::ceil(x); }},
    {OpKind::kRoundEven, true, -4, 4,
     [](double x) { return x - std::floor(x) == 0.5 ? 2 * std::round(x / 2) : std::round(x); }},
    {OpKind::kSqrt, true, 0.01, 9, [](double x) { return std::sqrt(x); }},
    {OpKind::kRsqrt, false, 0.01, 9, [](double x) { return 1 / std::sqrt(x); }},
    {OpKind::kExp, false, -4, 4, [](double x) { return std::exp(x); }},
    {OpKind::kExpm1, false, -2, 2, [](double x) { return std::expm1(x); }},
    {OpKind::kLog, false, 0.01, 9, [](double x) { return std::log(x); }},
    {OpKind::kLog1p, false, -0.5, 9, [](double x) { return std::log1p(x); }},
    {OpKind::kLogistic, false, -6, 6, [](double x) { return 1 / (1 + std::exp(-x)); }},
    {OpKind::kTanh, false, -3, 3, [](double x) { return std::tanh(x); }},
    {OpKind::kSine, false, -3, 3, [](double x) { return std::sin(x); }},
    {OpKind::kCosine, false, -3, 3, [](double x) { return std::cos(x); }},
};

double tolerance(DType d) {
  switch (d) {
    case DType::kF64:
      return 1e-13;
    case DType::kF32:
      return 4e-7;
    case DType::kBF16:
      return 1.0 / 128;
    default:
      return 1.0 / 1024;
  }
}

void expect_close(DType d, bool exact, double got, double want, const std::string& what) {
  if (exact) {
    const double r = ref_round(d, want);
    ASSERT_TRUE(got == r || (std::isnan(got) && std::isnan(r)))
        << what << ": got " << got << " want " << r;
  } else {
    ASSERT_NEAR(got, want, tolerance(d) * std::max(1.0, std::fabs(want))) << what;
  }
}

TEST(ExecutorTest, UnaryOpsEveryFloatDtype) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
    for (const UnaryCase& c : kUnary) {
      Builder b;
      TensorType t(d, {3, 50});
      Value x = b.param(t);
      hlo::Module m = b.finish({b.unary(c.kind, x)});
      const auto xs = random_values(150, c.lo, c.hi, 1, d);
      auto out = run(m, {HostTensor::from_doubles(t, xs)});
      for (std::size_t i = 0; i < xs.size(); ++i)
        expect_close(d, c.exact, out[0].get(static_cast<std::int64_t>(i)), c.f(xs[i]),
                     std::string(hlo::op_name(c.kind)) + " " + std::string(hlo::dtype_name(d)) +
                         " x=" + std::to_string(xs[i]));
    }
  }
}

struct BinaryCase {
  OpKind kind;
  bool exact;
  std::function<double(double, double)> f;
  bool integer_exponent = false;  ///< power: y in -3..3 (a negative base needs an integer exponent)
};

// |n| values with magnitudes in [lo, hi], exactly representable in |d|, negative in the
// first |period| of every 2 * |period| elements (period 1: -+-+..., period 2: --++--++...).
std::vector<double> signed_values(std::int64_t n, double lo, double hi, unsigned seed, DType d,
                                  std::size_t period = 1) {
  std::vector<double> v = random_values(n, lo, hi, seed, d);
  for (std::size_t i = 0; i < v.size(); ++i)
    if ((i / period) % 2 == 0) v[i] = -v[i];
  return v;
}

TEST(ExecutorTest, BinaryOpsEveryFloatDtype) {
  const BinaryCase cases[] = {
      {OpKind::kAdd, true, [](double a, double b) { return a + b; }},
      {OpKind::kSubtract, true, [](double a, double b) { return a - b; }},
      {OpKind::kMultiply, true, [](double a, double b) { return a * b; }},
      {OpKind::kDivide, true, [](double a, double b) { return a / b; }},
      {OpKind::kMaximum, true, [](double a, double b) { return a > b ? a : b; }},
      {OpKind::kMinimum, true, [](double a, double b) { return a < b ? a : b; }},
      {OpKind::kRemainder, true, [](double a, double b) { return std::fmod(a, b); }},
      {OpKind::kPower, false, [](double a, double b) { return std::pow(a, b); }},
      {OpKind::kPower, false, [](double a, double b) { return std::pow(a, b); }, true},
  };
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
    for (const BinaryCase& c : cases) {
      Builder b;
      TensorType t(d, {7, 9});
      Value x = b.param(t), y = b.param(t);
      hlo::Module m = b.finish({b.binary(c.kind, x, y)});
      // Both signs: x in +-[0.1, 4] with signs -+-+, y in +-[0.5, 3] with signs --++, so all
      // four sign pairs of divide and remainder occur. pow with a non-integer exponent takes
      // x > 0; with an integer exponent (-3..3), x of both signs.
      const bool pow_real = c.kind == OpKind::kPower && !c.integer_exponent;
      const auto xs = pow_real ? random_values(63, 0.1, 4, 2, d) : signed_values(63, 0.1, 4, 2, d);
      const auto ys = c.integer_exponent ? random_values(63, -3, 3, 3, DType::kI32)
                                         : signed_values(63, 0.5, 3, 3, d, 2);
      auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys)});
      for (std::size_t i = 0; i < xs.size(); ++i)
        expect_close(d, c.exact, out[0].get(static_cast<std::int64_t>(i)), c.f(xs[i], ys[i]),
                     std::string(hlo::op_name(c.kind)) + " " + std::string(hlo::dtype_name(d)));
    }
  }
}

TEST(ExecutorTest, IntegerOps) {
  const std::pair<OpKind, std::function<std::int64_t(std::int64_t, std::int64_t)>> cases[] = {
      {OpKind::kAdd, [](std::int64_t a, std::int64_t b) { return a + b; }},
      {OpKind::kSubtract, [](std::int64_t a, std::int64_t b) { return a - b; }},
      {OpKind::kMultiply, [](std::int64_t a, std::int64_t b) { return a * b; }},
      {OpKind::kDivide, [](std::int64_t a, std::int64_t b) { return a / b; }},
      {OpKind::kRemainder, [](std::int64_t a, std::int64_t b) { return a % b; }},
      {OpKind::kMaximum, [](std::int64_t a, std::int64_t b) { return std::max(a, b); }},
      {OpKind::kMinimum, [](std::int64_t a, std::int64_t b) { return std::min(a, b); }},
      {OpKind::kAnd, [](std::int64_t a, std::int64_t b) { return a & b; }},
      {OpKind::kOr, [](std::int64_t a, std::int64_t b) { return a | b; }},
      {OpKind::kXor, [](std::int64_t a, std::int64_t b) { return a ^ b; }},
  };
  for (DType d : {DType::kI8, DType::kI16, DType::kI32, DType::kI64, DType::kU8}) {
    const bool u = d == DType::kU8;
    for (const auto& [k, f] : cases) {
      Builder b;
      TensorType t(d, {40});
      Value x = b.param(t), y = b.param(t);
      hlo::Module m = b.finish({b.binary(k, x, y)});
      // Divisors of both signs for signed types: 1..9 and -9..-1.
      const auto xs = random_values(40, u ? 0 : -100, 100, 4, d),
                 ys = u ? random_values(40, 1, 9, 5, d) : signed_values(40, 1, 9, 5, d, 2);
      auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys)});
      for (std::size_t i = 0; i < xs.size(); ++i) {
        std::int64_t want = f(static_cast<std::int64_t>(xs[i]), static_cast<std::int64_t>(ys[i]));
        // Wrap to the dtype's width.
        const int bits = 8 * hlo::dtype_size(d);
        if (bits < 64) {
          want &= (std::int64_t{1} << bits) - 1;
          if (!u && want >= (std::int64_t{1} << (bits - 1))) want -= std::int64_t{1} << bits;
        }
        ASSERT_EQ(static_cast<std::int64_t>(out[0].get(static_cast<std::int64_t>(i))), want)
            << hlo::op_name(k) << " " << hlo::dtype_name(d);
      }
    }
  }
  // Division by zero (XLA's definition): x / 0 is all ones (-1, or the maximum for unsigned
  // types), x % 0 is x. INT_MIN / -1 is INT_MIN and INT_MIN % -1 is 0. i8 overflow wraps.
  Builder b;
  TensorType t(DType::kI8, {4});
  Value x = b.param(t), y = b.param(t);
  hlo::Module m = b.finish({b.div(x, y), b.add(x, x), b.binary(OpKind::kRemainder, x, y)});
  auto out = run(m, {HostTensor::from_doubles(t, {7, 100, -7, -128}),
                     HostTensor::from_doubles(t, {0, 3, 0, -1})});
  EXPECT_EQ(out[0].get(0), -1);
  EXPECT_EQ(out[0].get(1), 33);
  EXPECT_EQ(out[0].get(2), -1);
  EXPECT_EQ(out[0].get(3), -128);
  EXPECT_EQ(out[1].get(1), -56);  // 200 - 256
  EXPECT_EQ(out[2].get(0), 7);
  EXPECT_EQ(out[2].get(1), 1);
  EXPECT_EQ(out[2].get(2), -7);
  EXPECT_EQ(out[2].get(3), 0);
  for (DType d : {DType::kU8, DType::kU32, DType::kI32}) {
    Builder bu;
    TensorType tu(d, {2});
    Value xu = bu.param(tu), yu = bu.param(tu);
    hlo::Module mu = bu.finish({bu.div(xu, yu), bu.binary(OpKind::kRemainder, xu, yu)});
    auto o =
        run(mu, {HostTensor::from_doubles(tu, {9, 200}), HostTensor::from_doubles(tu, {0, 0})});
    const double all_ones = d == DType::kU8 ? 255 : d == DType::kU32 ? 4294967295.0 : -1;
    EXPECT_EQ(o[0].get(0), all_ones) << hlo::dtype_name(d);
    EXPECT_EQ(o[0].get(1), all_ones) << hlo::dtype_name(d);
    EXPECT_EQ(o[1].get(0), 9) << hlo::dtype_name(d);
    EXPECT_EQ(o[1].get(1), 200) << hlo::dtype_name(d);
  }
}

TEST(ExecutorTest, CompareSelectClampNot) {
  Builder b;
  TensorType t(DType::kF32, {6});
  Value x = b.param(t), y = b.param(t);
  Value p = b.compare(hlo::Comparison::kGE, x, y);
  Value s = b.select(p, x, y);
  Value c = b.clamp(b.scalar(DType::kF32, -1), x, b.scalar(DType::kF32, 1.5));
  Value n = b.unary(OpKind::kNot, p);
  hlo::Module m = b.finish({p, s, c, n});
  const std::vector<double> xs = {-3, -1, 0, 1, 2, 5}, ys = {0, -1, 1, 0, 3, 5};
  auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys)});
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(out[0].get(i), xs[i] >= ys[i] ? 1 : 0);
    EXPECT_EQ(out[1].get(i), std::max(xs[i], ys[i]));
    EXPECT_EQ(out[2].get(i), std::min(std::max(xs[i], -1.0), 1.5));
    EXPECT_EQ(out[3].get(i), xs[i] >= ys[i] ? 0 : 1);
  }
}

// Every comparison direction in float (with NaN), signed and unsigned integer dtypes, against
// the comparison done here in double or in the unsigned type itself.
TEST(ExecutorTest, CompareEveryDirectionAndDtype) {
  const std::pair<hlo::Comparison, std::function<bool(double, double)>> dirs[] = {
      {hlo::Comparison::kEQ, [](double a, double b) { return a == b; }},
      {hlo::Comparison::kNE, [](double a, double b) { return a != b; }},
      {hlo::Comparison::kLT, [](double a, double b) { return a < b; }},
      {hlo::Comparison::kLE, [](double a, double b) { return a <= b; }},
      {hlo::Comparison::kGT, [](double a, double b) { return a > b; }},
      {hlo::Comparison::kGE, [](double a, double b) { return a >= b; }},
  };
  struct Input {
    DType d;
    std::vector<double> xs, ys;
  };
  const double nan = std::nan("");
  const std::vector<Input> inputs = {
      // IEEE: NaN compares unequal to everything, itself included; -0 == +0.
      {DType::kF32,
       {-3, -1, 0, -0.0, 2, nan, 1, nan, INFINITY},
       {0, -1, 1, 0, 3, 1, nan, nan, 1e30}},
      {DType::kBF16,
       {-3, -1, 0, -0.0, 2, nan, 1, nan, -INFINITY},
       {0, -1, 1, 0, 3, 1, nan, nan, -1}},
      {DType::kF16, {-3, -1, 0, 2, nan, 65504}, {0, -1, 1, 3, nan, 65504}},
      {DType::kF64, {-3, -1, 0, 2, nan, 1e300}, {0, -1, 1, 3, 1, 1e300}},
      {DType::kI8, {-128, -1, 0, 127, 5}, {127, -1, -128, 127, -5}},
      {DType::kI32, {-2147483648.0, -1, 0, 2147483647.0}, {2147483647.0, 1, 0, -2147483648.0}},
      {DType::kI64, {-9e15, -1, 3, 9e15}, {9e15, -1, -3, 9e15}},
      // Unsigned: 0x80000000 and 0xFFFFFFFF are large, not negative.
      {DType::kU8, {0, 1, 128, 255, 200}, {255, 1, 127, 0, 200}},
      {DType::kU32, {0, 1, 2147483648.0, 4294967295.0}, {4294967295.0, 1, 1, 2147483648.0}},
  };
  for (const Input& in : inputs) {
    for (const auto& [dir, f] : dirs) {
      Builder b;
      TensorType t(in.d, {static_cast<std::int64_t>(in.xs.size())});
      Value x = b.param(t), y = b.param(t);
      hlo::Module m = b.finish({b.compare(dir, x, y)});
      auto out = run(m, {HostTensor::from_doubles(t, in.xs), HostTensor::from_doubles(t, in.ys)});
      EXPECT_EQ(out[0].type.dtype, DType::kPred);
      for (std::size_t i = 0; i < in.xs.size(); ++i)
        ASSERT_EQ(out[0].get(static_cast<std::int64_t>(i)), f(in.xs[i], in.ys[i]) ? 1 : 0)
            << hlo::dtype_name(in.d) << " " << hlo::comparison_name(dir) << " " << in.xs[i]
            << " vs " << in.ys[i];
    }
  }
  // u64 above 2^63, set bit for bit (a double cannot hold 2^64 - 1).
  Builder b;
  TensorType t(DType::kU64, {3});
  Value x = b.param(t), y = b.param(t);
  hlo::Module m =
      b.finish({b.compare(hlo::Comparison::kLT, x, y), b.compare(hlo::Comparison::kGT, x, y)});
  HostTensor hx(t), hy(t);
  const std::uint64_t xv[3] = {1, 0x8000000000000000ull, 0xFFFFFFFFFFFFFFFFull},
                      yv[3] = {0xFFFFFFFFFFFFFFFFull, 5, 0xFFFFFFFFFFFFFFFEull};
  for (int i = 0; i < 3; ++i) {
    hx.as<std::uint64_t>()[i] = xv[i];
    hy.as<std::uint64_t>()[i] = yv[i];
  }
  auto out = run(m, {hx, hy});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[0].get(i), xv[i] < yv[i] ? 1 : 0) << i;
    EXPECT_EQ(out[1].get(i), xv[i] > yv[i] ? 1 : 0) << i;
  }
}

TEST(ExecutorTest, SelectAndClampEveryDtype) {
  for (DType d : {DType::kBF16, DType::kF16, DType::kF64, DType::kI8, DType::kI32, DType::kI64,
                  DType::kU8, DType::kU32, DType::kPred}) {
    const bool pred = d == DType::kPred, uns = d == DType::kU8 || d == DType::kU32;
    Builder b;
    TensorType t(d, {8});
    Value x = b.param(t), y = b.param(t);
    Value p = b.param(TensorType(DType::kPred, {8}));
    const double lo = pred ? 0 : uns ? 2 : -1, hi = pred ? 1 : 5;
    hlo::Module m = b.finish({b.select(p, x, y), b.clamp(b.scalar(d, lo), x, b.scalar(d, hi))});
    const auto xs = pred ? std::vector<double>{0, 1, 1, 0, 1, 0, 0, 1}
                         : random_values(8, uns ? 0 : -8, 8, 41, d);
    const auto ys = pred ? std::vector<double>{1, 1, 0, 0, 0, 1, 0, 1}
                         : random_values(8, uns ? 0 : -8, 8, 42, d);
    const std::vector<double> ps = {1, 0, 0, 1, 1, 0, 1, 0};
    auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys),
                       HostTensor::from_doubles(TensorType(DType::kPred, {8}), ps)});
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(out[0].get(i), ps[i] ? xs[i] : ys[i]) << hlo::dtype_name(d) << " " << i;
      EXPECT_EQ(out[1].get(i), std::min(std::max(xs[i], lo), hi)) << hlo::dtype_name(d) << " " << i;
    }
  }
}

// reduce with `and` / `or` regions over pred (logical) and i32 / u8 (bitwise).
TEST(ExecutorTest, ReduceAndOr) {
  for (DType d : {DType::kPred, DType::kI32, DType::kU8}) {
    const Dims shape{3, 4};
    TensorType t(d, shape);
    std::vector<double> xs(12);
    std::mt19937 rng(51);
    for (double& x : xs)
      x = d == DType::kPred ? static_cast<double>(rng() % 4 != 0)
                            : static_cast<double>(rng() % 256);
    xs[4] = xs[5] = xs[6] = xs[7] = 1;                           // row 1 all true in pred
    if (d == DType::kPred) xs[8] = xs[9] = xs[10] = xs[11] = 0;  // row 2 all false
    for (hlo::ReduceKind k : {hlo::ReduceKind::kAnd, hlo::ReduceKind::kOr}) {
      const bool is_and = k == hlo::ReduceKind::kAnd;
      const std::int64_t ones = d == DType::kPred ? 1 : d == DType::kU8 ? 255 : -1;
      for (const Dims& dims : {Dims{1}, Dims{0}, Dims{0, 1}}) {
        Builder b;
        Value x = b.param(t);
        hlo::Module m =
            b.finish({b.reduce(x, b.scalar(d, is_and ? static_cast<double>(ones) : 0), dims, k)});
        auto out = run(m, {HostTensor::from_doubles(t, xs)});
        const bool over_rows = dims.size() == 2 || dims[0] == 0,
                   over_cols = dims.size() == 2 || dims[0] == 1;
        const std::int64_t on = out[0].type.num_elements();
        for (std::int64_t o = 0; o < on; ++o) {
          std::int64_t acc = is_and ? ones : 0;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 4; ++j) {
              if (!over_rows && i != o) continue;
              if (!over_cols && j != o) continue;
              const std::int64_t v = static_cast<std::int64_t>(xs[i * 4 + j]);
              acc = is_and ? (acc & v) : (acc | v);
            }
          if (d == DType::kU8) acc &= 255;
          ASSERT_EQ(static_cast<std::int64_t>(out[0].get(o)), acc)
              << hlo::dtype_name(d) << " " << hlo::reduce_kind_name(k) << " dims " << dims.size()
              << "/" << dims[0] << " out " << o;
        }
      }
    }
  }
}

TEST(ExecutorTest, Convert) {
  Builder b;
  TensorType t(DType::kF32, {8});
  Value x = b.param(t);
  hlo::Module m =
      b.finish({b.convert(x, DType::kBF16), b.convert(x, DType::kI32), b.convert(x, DType::kF16),
                b.convert(x, DType::kPred), b.convert(x, DType::kU8)});
  const auto xs = random_values(8, -300, 300, 9, DType::kF32);
  auto out = run(m, {HostTensor::from_doubles(t, xs)});
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(out[0].get(i), ref_round(DType::kBF16, xs[i]));
    EXPECT_EQ(out[1].get(i), std::trunc(xs[i]));
    EXPECT_EQ(out[2].get(i), ref_round(DType::kF16, xs[i]));
    EXPECT_EQ(out[3].get(i), xs[i] != 0 ? 1 : 0);
    EXPECT_EQ(out[4].get(i), std::clamp(std::trunc(xs[i]), 0.0, 255.0));
  }
}

TEST(ExecutorTest, ReduceEveryKindAndLayout) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF64, DType::kI32}) {
    const Dims shape{4, 5, 6};
    for (const Dims& dims : {Dims{2}, Dims{0}, Dims{1}, Dims{0, 2}, Dims{0, 1, 2}}) {
      for (hlo::ReduceKind k :
           {hlo::ReduceKind::kAdd, hlo::ReduceKind::kMax, hlo::ReduceKind::kMin}) {
        Builder b;
        TensorType t(d, shape);
        Value x = b.param(t);
        const double init = k == hlo::ReduceKind::kAdd   ? 0
                            : k == hlo::ReduceKind::kMax ? -1e9
                                                         : 1e9;
        hlo::Module m = b.finish({b.reduce(x, b.scalar(d, init), dims, k)});
        auto xs = random_values(120, -10, 10, 11, d);
        // bf16: multiples of 1/64 (|x| <= 10), so every partial sum is exact in float32 whatever
        // the order; the result must then be the float32 sum rounded to nearest even, exactly.
        if (d == DType::kBF16)
          for (double& x : xs) x = ref_round(DType::kBF16, std::round(x * 64) / 64);
        auto out = run(m, {HostTensor::from_doubles(t, xs)});
        // Reference: accumulate in double into the kept indices.
        std::vector<bool> red(3, false);
        for (std::int64_t r : dims) red[r] = true;
        Dims kept;
        for (int i = 0; i < 3; ++i)
          if (!red[i]) kept.push_back(shape[i]);
        std::int64_t on = 1;
        for (std::int64_t v : kept) on *= v;
        std::vector<double> acc(static_cast<std::size_t>(on), init);
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 5; ++j)
            for (int l = 0; l < 6; ++l) {
              const int idx[3] = {i, j, l};
              std::int64_t o = 0;
              for (int q = 0; q < 3; ++q)
                if (!red[q]) o = o * shape[q] + idx[q];
              const double v = xs[static_cast<std::size_t>((i * 5 + j) * 6 + l)];
              double& a = acc[static_cast<std::size_t>(o)];
              a = k == hlo::ReduceKind::kAdd   ? a + v
                  : k == hlo::ReduceKind::kMax ? std::max(a, v)
                                               : std::min(a, v);
            }
        for (std::int64_t o = 0; o < on; ++o) {
          if (k == hlo::ReduceKind::kAdd && d == DType::kBF16)
            ASSERT_EQ(out[0].get(o), ref_round(DType::kBF16, static_cast<float>(acc[o])));
          else if (k == hlo::ReduceKind::kAdd)
            ASSERT_NEAR(out[0].get(o), acc[o], 1e-4 * std::max(1.0, std::fabs(acc[o])));
          else
            ASSERT_EQ(out[0].get(o), acc[o]);
        }
      }
    }
  }
}

TEST(ExecutorTest, DotGeneralBatchedAndTransposed) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kI32}) {
    // lhs [k=5, b=2, m=3], rhs [b=2, n=4, k=5] -> [b, m, n]
    Builder b;
    TensorType lt(d, {5, 2, 3}), rt(d, {2, 4, 5});
    Value l = b.param(lt), r = b.param(rt);
    hlo::Module m = b.finish({b.dot_general(l, r, hlo::DotDims{{1}, {0}, {0}, {2}})});
    const auto ls = random_values(30, -2, 2, 12, d), rs = random_values(40, -2, 2, 13, d);
    auto out = run(m, {HostTensor::from_doubles(lt, ls), HostTensor::from_doubles(rt, rs)});
    ASSERT_EQ(out[0].type.dims, (Dims{2, 3, 4}));
    for (int bb = 0; bb < 2; ++bb)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          double s = 0;
          for (int k = 0; k < 5; ++k) s += ls[(k * 2 + bb) * 3 + i] * rs[(bb * 4 + j) * 5 + k];
          const double got = out[0].get((bb * 3 + i) * 4 + j);
          if (d == DType::kI32 || d == DType::kF64)
            ASSERT_NEAR(got, s, 1e-12);
          else
            ASSERT_NEAR(got, s, tolerance(d) * 8 * std::max(1.0, std::fabs(s)));
        }
  }
}

TEST(ExecutorTest, Bf16DotIsRoundedFloat32Result) {
  // Small integers: every product and sum is exact in float32, so the bf16 result must be the
  // round-to-nearest-even of the exact sum.
  Builder b;
  TensorType lt(DType::kBF16, {2, 3}), rt(DType::kBF16, {3, 2});
  Value l = b.param(lt), r = b.param(rt);
  hlo::Module m = b.finish({b.matmul(l, r)});
  const std::vector<double> ls = {100, 3, 7, -5, 2, 9}, rs = {1, 2, 3, 5, 11, 1};
  auto out = run(m, {HostTensor::from_doubles(lt, ls), HostTensor::from_doubles(rt, rs)});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += ls[i * 3 + k] * rs[k * 2 + j];
      EXPECT_EQ(out[0].get(i * 2 + j), ref_round(DType::kBF16, s));
    }
}

TEST(ExecutorTest, DataMovement) {
  Builder b;
  TensorType t(DType::kF32, {3, 4});
  Value x = b.param(t);
  Value one = b.scalar(DType::kI32, 1), big = b.scalar(DType::kI32, 7);
  Value tr = b.transpose(x, {1, 0});
  Value sl = b.slice(x, {0, 1}, {3, 4}, {2, 2});
  Value pd = b.pad(x, b.scalar(DType::kF32, -1), {1, 0}, {0, -1}, {0, 1});
  Value cc = b.concatenate({x, x}, 1);
  Value rv = b.reverse(x, {0, 1});
  Value ds = b.dynamic_slice(x, {one, big}, {2, 2});  // column start clamped to 2
  Value us = b.dynamic_update_slice(x, b.slice(x, {0, 0}, {1, 2}), {big, one});  // row clamped to 2
  Value io = b.iota(TensorType(DType::kI32, {2, 3}), 1);
  Value bc = b.broadcast_in_dim(b.slice(x, {0, 0}, {1, 4}), {2, 3, 4}, {1, 2});
  Value rs = b.reshape(x, {2, 6});
  hlo::Module m = b.finish({tr, sl, pd, cc, rv, ds, us, io, bc, rs});
  std::vector<double> xs(12);
  for (int i = 0; i < 12; ++i) xs[i] = i + 1;
  auto X = [&](int i, int j) { return xs[i * 4 + j]; };
  auto out = run(m, {HostTensor::from_doubles(t, xs)});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(out[0].get(i * 3 + j), X(j, i));
  EXPECT_EQ(out[1].type.dims, (Dims{2, 2}));
  EXPECT_EQ(out[1].get(0), X(0, 1));
  EXPECT_EQ(out[1].get(3), X(2, 3));
  // pad: rows 1 low, cols interior 1 then high -1: [4, 6].
  ASSERT_EQ(out[2].type.dims, (Dims{4, 6}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) {
      const double want = (i >= 1 && j % 2 == 0) ? X(i - 1, j / 2) : -1;
      EXPECT_EQ(out[2].get(i * 6 + j), want) << i << "," << j;
    }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 8; ++j) EXPECT_EQ(out[3].get(i * 8 + j), X(i, j % 4));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(out[4].get(i * 4 + j), X(2 - i, 3 - j));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(out[5].get(i * 2 + j), X(1 + i, 2 + j));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(out[6].get(i * 4 + j), (i == 2 && (j == 1 || j == 2)) ? X(0, j - 1) : X(i, j));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[7].get(i), i % 3);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out[8].get(i), X(0, i % 4));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out[9].get(i), xs[i]);
}

TEST(ExecutorTest, GatherScatterSort) {
  Builder b;
  TensorType t(DType::kF32, {5, 3});
  TensorType it(DType::kI32, {4, 1});
  Value x = b.param(t);
  Value idx = b.param(it);
  Value g = b.gather(x, idx, hlo::GatherDims{{1}, {0}, {0}, 1}, {1, 3});
  Value upd = b.param(TensorType(DType::kF32, {4, 3}));
  Value sa = b.scatter(x, idx, upd, hlo::ScatterDims{{1}, {0}, {0}, 1}, hlo::ScatterKind::kAdd);
  Value sr = b.scatter(x, idx, upd, hlo::ScatterDims{{1}, {0}, {0}, 1}, hlo::ScatterKind::kReplace);
  auto sorted = b.sort({x, b.iota(TensorType(DType::kI32, {5, 3}), 0)}, 0, 0, /*descending=*/true);
  hlo::Module m = b.finish({g, sa, sr, sorted[0], sorted[1]});
  const std::vector<double> xs = {5, 1, 9, 2, 8, 3, 7, 7, 7, 0, 4, 6, 3, 2, 1};
  const std::vector<double> is = {4, 0, 4, 9};  // 9 is out of bounds: gather clamps, scatter skips
  std::vector<double> us(12);
  for (int i = 0; i < 12; ++i) us[i] = 10 * (i + 1);
  auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(it, is),
                     HostTensor::from_doubles(TensorType(DType::kF32, {4, 3}), us)});
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(out[0].get(r * 3 + c), xs[std::min<int>(static_cast<int>(is[r]), 4) * 3 + c]);
  std::vector<double> add = xs, rep = xs;
  for (int r = 0; r < 4; ++r) {
    if (is[r] > 4) continue;
    for (int c = 0; c < 3; ++c) {
      add[static_cast<std::size_t>(is[r] * 3 + c)] += us[r * 3 + c];
      rep[static_cast<std::size_t>(is[r] * 3 + c)] = us[r * 3 + c];
    }
  }
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ(out[1].get(i), add[i]);
    EXPECT_EQ(out[2].get(i), rep[i]);
  }
  // Descending stable sort of each column, with the original row as payload.
  for (int c = 0; c < 3; ++c) {
    std::vector<std::pair<double, int>> col;
    for (int r = 0; r < 5; ++r) col.push_back({xs[r * 3 + c], r});
    std::stable_sort(col.begin(), col.end(), [](auto& a, auto& b2) { return a.first > b2.first; });
    for (int r = 0; r < 5; ++r) {
      EXPECT_EQ(out[3].get(r * 3 + c), col[r].first);
      EXPECT_EQ(out[4].get(r * 3 + c), col[r].second);
    }
  }
}

TEST(ExecutorTest, RngBitGeneratorIsDeterministicAndAdvances) {
  Builder b;
  TensorType st(DType::kU64, {2});
  Value s = b.param(st);
  auto [ns, bits] = b.rng_bit_generator(s, TensorType(DType::kU32, {1000}));
  hlo::Module m = b.finish({ns, bits});
  HostTensor state(st);
  state.as<std::uint64_t>()[0] = 42;
  state.as<std::uint64_t>()[1] = 7;
  auto a = run(m, {state});
  auto c = run(m, {state});
  EXPECT_EQ(a[1].data, c[1].data);
  EXPECT_EQ(a[0].as<std::uint64_t>()[1], 8u);
  // Roughly uniform: mean of 1000 uint32 within 10% of 2^31.
  double mean = 0;
  for (int i = 0; i < 1000; ++i) mean += a[1].as<std::uint32_t>()[i];
  mean /= 1000;
  EXPECT_NEAR(mean / 2147483648.0, 1.0, 0.1);
  auto d = run(m, {a[0]});
  EXPECT_NE(d[1].data, a[1].data);
}

// Known answers for Philox-4x32-10 from Random123's kat_vectors (counter[4], key[2] -> out[4]).
TEST(ExecutorTest, PhiloxMatchesRandom123KnownAnswers) {
  struct Kat {
    std::uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    std::uint32_t out[4];
    kernels::philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(out[i], k.out[i]) << std::hex << "ctr[0]=" << k.ctr[0] << " word " << i;
  }
  // Through the op: state {key = 0, counter = 0} gives the first vector as its first 4 words,
  // and the second block is Philox of counter {0, 0, 1, 0}.
  Builder b;
  TensorType st(DType::kU64, {2});
  Value s = b.param(st);
  auto [ns, bits] = b.rng_bit_generator(s, TensorType(DType::kU32, {8}));
  hlo::Module m = b.finish({ns, bits});
  auto out = run(m, {HostTensor(st)});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[1].as<std::uint32_t>()[i], kats[0].out[i]) << i;
  const std::uint32_t ctr1[4] = {0, 0, 1, 0}, key0[2] = {0, 0};
  std::uint32_t block1[4];
  kernels::philox4x32_10(ctr1, key0, block1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[1].as<std::uint32_t>()[4 + i], block1[i]) << i;
}

// complex64: arithmetic and dot_general are rejected with an error naming complex64; data
// movement (a dtype-agnostic copy of 8-byte elements) runs.
TEST(ExecutorTest, Complex64ArithmeticIsRejectedAndDataMovementRuns) {
  TensorType t(DType::kC64, {2, 3});
  HostTensor x(t);
  for (int i = 0; i < 6; ++i) {
    x.as<float>()[2 * i] = static_cast<float>(i);           // real
    x.as<float>()[2 * i + 1] = static_cast<float>(10 + i);  // imaginary
  }
  for (OpKind k : {OpKind::kAdd, OpKind::kSubtract, OpKind::kMultiply}) {
    Builder b;
    Value p = b.param(t), q = b.param(t);
    hlo::Module m = b.finish({b.binary(k, p, q)});
    try {
      run(m, {x, x});
      ADD_FAILURE() << hlo::op_name(k) << " on complex64 ran";
    } catch (const ExecError& e) {
      EXPECT_NE(std::string(e.what()).find("complex64"), std::string::npos) << e.what();
    }
  }
  {
    Builder b;
    Value p = b.param(t);
    hlo::Module m = b.finish({b.unary(OpKind::kNegate, p)});
    EXPECT_THROW(run(m, {x}), ExecError);
  }
  {
    Builder b;
    Value p = b.param(t), q = b.param(TensorType(DType::kC64, {3, 2}));
    hlo::Module m = b.finish({b.matmul(p, q)});
    try {
      run(m, {x, HostTensor(TensorType(DType::kC64, {3, 2}))});
      ADD_FAILURE() << "dot_general on complex64 ran";
    } catch (const ExecError& e) {
      EXPECT_NE(std::string(e.what()).find("complex64"), std::string::npos) << e.what();
    }
  }
  Builder b;
  Value p = b.param(t);
  hlo::Module m = b.finish({b.transpose(p, {1, 0}), b.reverse(p, {1})});
  auto out = run(m, {x});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(out[0].as<float>()[2 * (i * 2 + j)], static_cast<float>(j * 3 + i));
      EXPECT_EQ(out[0].as<float>()[2 * (i * 2 + j) + 1], static_cast<float>(10 + j * 3 + i));
      EXPECT_EQ(out[1].as<float>()[2 * (j * 3 + i)], static_cast<float>(j * 3 + (2 - i)));
    }
}

TEST(ExecutorTest, FiveOpChainFusesIntoOneKernelWithSameResults) {
  for (DType d : {DType::kF32, DType::kBF16}) {
    Builder b;
    TensorType t(d, {300, 70});
    Value x = b.param(t), y = b.param(t);
    // ((x * y + x) - 0.5) max 0, then exp: 5 elementwise ops (the constant is broadcast).
    Value half = b.broadcast_in_dim(b.scalar(d, 0.5), t.dims, {});
    Value v = b.exp(
        b.max(b.sub(b.add(b.mul(x, y), x), half), b.broadcast_in_dim(b.scalar(d, 0), t.dims, {})));
    hlo::Module m = b.finish({v});
    compiler::Executable fused = compiler::compile(m);
    int fused_kernels = 0;
    for (const auto& k : fused.kernels) fused_kernels += k.kind != compiler::KernelKind::kConstant;
    EXPECT_EQ(fused_kernels, 1);
    compiler::CompileOptions off;
    off.fusion = false;
    compiler::Executable unfused = compiler::compile(m, off);
    EXPECT_GE(unfused.kernels.size(), 5u);
    const auto xs = random_values(t.num_elements(), -1, 1, 21, d),
               ys = random_values(t.num_elements(), -1, 1, 22, d);
    std::vector<HostTensor> in = {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys)};
    auto a = LoadedExecutable(std::move(fused)).run(in);
    auto c = LoadedExecutable(std::move(unfused)).run(in);
    EXPECT_EQ(a[0].data, c[0].data);  // bit-identical: each op rounds to its dtype either way
    for (std::int64_t i = 0; i < t.num_elements(); ++i) {
      const double want = std::exp(std::max(xs[i] * ys[i] + xs[i] - 0.5, 0.0));
      ASSERT_NEAR(a[0].get(i), want, tolerance(d) * 4 * want) << i;
    }
  }
}

TEST(ExecutorTest, SoftmaxRowFusesReduceAndRunsOnTwoThreads) {
  // exp(x - max) / sum: large enough to use the parallel path.
  Builder b;
  TensorType t(DType::kF32, {512, 256});
  Value x = b.param(t);
  Value mx = b.reduce(x, b.scalar(DType::kF32, -INFINITY), {1}, hlo::ReduceKind::kMax);
  Value e = b.exp(b.sub(x, b.broadcast_in_dim(mx, t.dims, {0})));
  Value s = b.reduce(e, b.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);
  Value y = b.div(e, b.broadcast_in_dim(s, t.dims, {0}));
  hlo::Module m = b.finish({y});
  const auto xs = random_values(t.num_elements(), -5, 5, 31, DType::kF32);
  auto out = run(m, {HostTensor::from_doubles(t, xs)});
  for (int r = 0; r < 512; r += 37) {
    double mxv = -INFINITY, sum = 0;
    for (int c = 0; c < 256; ++c) mxv = std::max(mxv, xs[r * 256 + c]);
    for (int c = 0; c < 256; ++c) sum += std::exp(xs[r * 256 + c] - mxv);
    for (int c = 0; c < 256; ++c)
      ASSERT_NEAR(out[0].get(r * 256 + c), std::exp(xs[r * 256 + c] - mxv) / sum, 1e-6);
  }
}

TEST(ExecutorTest, CustomCallRegistry) {
  register_custom_call("test.double_it", [](const CustomCallArgs& a) {
    const auto* in = static_cast<const float*>(a.inputs[0]);
    auto* out = static_cast<float*>(a.outputs[0]);
    for (std::int64_t i = 0; i < a.input_types[0].num_elements(); ++i) out[i] = 2 * in[i];
  });
  Builder b;
  TensorType t(DType::kF32, {3});
  Value x = b.param(t);
  hlo::Module m = b.finish({b.custom_call("test.double_it", {x}, {t})[0]});
  auto out = run(m, {HostTensor::from_doubles(t, {1, 2, 3})});
  EXPECT_EQ(out[0].get(2), 6);
  Builder b2;
  Value x2 = b2.param(t);
  hlo::Module m2 = b2.finish({b2.custom_call("test.unknown", {x2}, {t})[0]});
  EXPECT_THROW(run(m2, {HostTensor::from_doubles(t, {1, 2, 3})}), ExecError);
}

}  // namespace
}  // namespace vtrn::runtime
