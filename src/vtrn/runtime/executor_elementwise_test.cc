// Elementwise ops against plain double-precision loops written here, in each dtype they support.
// Ops that are exact in float32 (add, subtract, multiply, divide, sqrt, ...) must match the
// reference bit for bit: the float32 result is the double result rounded once, and bf16/f16
// results are that float32 rounded to nearest even (computed here by a nearest-value search).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "vtrn/hlo/parser.h"
#include "vtrn/runtime/aten_sum.h"
#include "vtrn/runtime/executor_test_util.h"
#include "vtrn/runtime/vecmath.h"

namespace vtrn::runtime {
namespace {

using namespace test;

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

struct BinaryCase {
  OpKind kind;
  bool exact;
  std::function<double(double, double)> f;
  bool integer_exponent = false;  ///< power: y in -3..3 (a negative base needs an integer exponent)
};

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
    // Through int32, then wrapped, as PyTorch's CPU converts: -5.7 is 251.
    EXPECT_EQ(out[4].get(i),
              static_cast<std::uint8_t>(static_cast<std::int32_t>(std::trunc(xs[i]))));
  }
}

// Float to int out of range, as PyTorch's CPU converts on x86: NaN and values the truncating
// conversion cannot hold give the integer minimum; int16/int8/uint8 go through int32 and wrap.
// (Each expectation is torch 2.13's `tensor(v).to(dtype)`.)
TEST(ExecutorTest, ConvertFloatToIntOutOfRange) {
  Builder b;
  const std::vector<double> xs = {NAN, INFINITY, -INFINITY, 1e20, -1e20, 3e9, 70000, -1, 300};
  TensorType t(DType::kF32, {static_cast<std::int64_t>(xs.size())});
  Value x = b.param(t);
  hlo::Module m = b.finish({b.convert(x, DType::kI64), b.convert(x, DType::kI32),
                            b.convert(x, DType::kI16), b.convert(x, DType::kU8)});
  auto out = run(m, {HostTensor::from_doubles(t, xs)});
  const double i64min = -9223372036854775808.0, i32min = -2147483648.0;
  const std::vector<std::vector<double>> expect = {
      {i64min, i64min, i64min, i64min, i64min, 3e9, 70000, -1, 300},
      {i32min, i32min, i32min, i32min, i32min, i32min, 70000, -1, 300},
      {0, 0, 0, 0, 0, 0, 4464, -1, 300},
      {0, 0, 0, 0, 0, 0, 112, 255, 44},
  };
  for (std::size_t k = 0; k < expect.size(); ++k)
    for (std::size_t i = 0; i < xs.size(); ++i)
      EXPECT_EQ(out[k].get(static_cast<std::int64_t>(i)), expect[k][i]) << k << " " << xs[i];
}

// A fused loop writes every value of it that is needed outside (multi-output fusion): |a| and
// |m2| are returned beside the root, |b|'s float32 product feeds the root inside the loop.
TEST(ExecutorTest, FusedLoopWritesEachValueNeededOutside) {
  Builder b;
  TensorType t(DType::kBF16, {7, 300});
  Value x = b.param(t);
  Value xf = b.convert(x, DType::kF32);
  Value m = b.mul(xf, xf);
  Value a = b.convert(m, DType::kBF16);
  Value m2 = b.add(m, xf);
  Value root = b.convert(b.mul(m2, xf), DType::kBF16);
  hlo::Module mod = b.finish({a, root, m2});
  const auto xs = random_values(2100, -4, 4, 7, DType::kBF16);
  for (bool fusion : {true, false}) {
    if (fusion) {
      const compiler::Executable exe = compiler::compile(mod);
      int fused = 0;
      for (const compiler::Kernel& k : exe.kernels) fused += k.kind == compiler::KernelKind::kFused;
      ASSERT_EQ(fused, 1);
    }
    auto out = run(mod, {HostTensor::from_doubles(t, xs)}, fusion);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double x2 = xs[i] * xs[i];                  // exact in float32
      const double s = static_cast<float>(x2 + xs[i]);  // float32 sum
      const auto j = static_cast<std::int64_t>(i);
      expect_close(DType::kBF16, true, out[0].get(j), x2, "a");
      expect_close(DType::kBF16, true, out[1].get(j), static_cast<float>(s * xs[i]), "root");
      expect_close(DType::kF32, true, out[2].get(j), s, "m2");
    }
  }
}

// Broadcast operands read through the loop's strided loads: a table broadcast over outer dims
// ([7, 33] over [3, 5, 7, 33]), one with a broadcast dim between its own ([5, 33]), one
// repeated along the last dim ([3, 7]), one read transposed ([33, 7] as dims 3, 2) and one of
// size-1 dims. The domain is not a multiple of the loop's chunk, so chunks start mid-row. The
// float32 results are the reference's bit for bit: the same operations in the same order.
TEST(ExecutorTest, BroadcastOperandsReadEveryElementWhereverAChunkStarts) {
  const std::vector<std::int64_t> dims = {3, 5, 7, 33};
  Builder b;
  Value x = b.param(TensorType(DType::kF32, dims));
  Value table = b.param(TensorType(DType::kF32, {7, 33}));
  Value gap = b.param(TensorType(DType::kF32, {5, 33}));
  Value rows = b.param(TensorType(DType::kF32, {3, 7}));
  Value turned = b.param(TensorType(DType::kF32, {33, 7}));
  Value ones = b.param(TensorType(DType::kF32, {1, 5, 1, 1}));
  Value root = b.add(x, b.broadcast_in_dim(table, dims, {2, 3}));
  root = b.mul(root, b.broadcast_in_dim(gap, dims, {1, 3}));
  root = b.sub(root, b.broadcast_in_dim(rows, dims, {0, 2}));
  root = b.mul(root, b.broadcast_in_dim(turned, dims, {3, 2}));
  root = b.add(root, b.broadcast_in_dim(ones, dims, {0, 1, 2, 3}));
  hlo::Module mod = b.finish({root});
  const auto xs = random_values(3 * 5 * 7 * 33, -2, 2, 11, DType::kF32);
  const auto ts = random_values(7 * 33, -2, 2, 12, DType::kF32);
  const auto gs = random_values(5 * 33, -2, 2, 13, DType::kF32);
  const auto rs = random_values(3 * 7, -2, 2, 14, DType::kF32);
  const auto us = random_values(33 * 7, -2, 2, 15, DType::kF32);
  const auto os = random_values(5, -2, 2, 16, DType::kF32);
  for (bool fusion : {true, false}) {
    auto out = run(mod,
                   {HostTensor::from_doubles(TensorType(DType::kF32, dims), xs),
                    HostTensor::from_doubles(TensorType(DType::kF32, {7, 33}), ts),
                    HostTensor::from_doubles(TensorType(DType::kF32, {5, 33}), gs),
                    HostTensor::from_doubles(TensorType(DType::kF32, {3, 7}), rs),
                    HostTensor::from_doubles(TensorType(DType::kF32, {33, 7}), us),
                    HostTensor::from_doubles(TensorType(DType::kF32, {1, 5, 1, 1}), os)},
                   fusion);
    std::size_t e = 0;
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 5; ++j)
        for (std::size_t k = 0; k < 7; ++k)
          for (std::size_t l = 0; l < 33; ++l, ++e) {
            float v = static_cast<float>(xs[e]) + static_cast<float>(ts[k * 33 + l]);
            v *= static_cast<float>(gs[j * 33 + l]);
            v -= static_cast<float>(rs[i * 7 + k]);
            v *= static_cast<float>(us[l * 7 + k]);
            v += static_cast<float>(os[j]);
            ASSERT_EQ(out[0].get(static_cast<std::int64_t>(e)), static_cast<double>(v))
                << "element " << e << (fusion ? " fused" : " unfused");
          }
  }
}

// math.fma rounds a * b + c once: glibc's std::fma (a correctly rounded software fma here) is
// the reference, bit for bit, in a fused loop and alone, with a per-element and a broadcast
// scalar multiplier, over more than one chunk. The test also checks that the product rounded
// first gives other bits for some elements, so a multiply-then-add fails it.
TEST(ExecutorTest, FmaRoundsOnce) {
  const std::int64_t n = 9001;
  for (DType d : {DType::kF32, DType::kF64}) {
    for (bool scalar_b : {false, true}) {
      for (bool fusion : {true, false}) {
        Builder bld;
        TensorType t(d, {n});
        Value a = bld.param(t), c = bld.param(t);
        Value b = scalar_b ? bld.broadcast_to(bld.param(TensorType(d, {})), {n}) : bld.param(t);
        hlo::Module m = bld.finish({bld.fma(a, b, c)});
        const auto av = signed_values(n, 0.5, 4, 1, d), cv = signed_values(n, 0.5, 4, 3, d, 2);
        const auto bv = scalar_b ? std::vector<double>{0.1} : signed_values(n, 0.5, 4, 2, d);
        std::vector<HostTensor> in = {HostTensor::from_doubles(t, av),
                                      HostTensor::from_doubles(t, cv)};
        in.push_back(HostTensor::from_doubles(TensorType(d, scalar_b ? Dims{} : Dims{n}), bv));
        auto out = run(m, in, fusion);
        std::int64_t rounded_twice_differs = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const double bi = bv[scalar_b ? 0 : static_cast<std::size_t>(i)];
          const auto k = static_cast<std::size_t>(i);
          double want, twice;
          if (d == DType::kF32) {
            const float fa = static_cast<float>(av[k]), fb = static_cast<float>(bi),
                        fc = static_cast<float>(cv[k]);
            want = std::fma(fa, fb, fc);
            volatile float p = fa * fb;
            twice = p + fc;
          } else {
            want = std::fma(av[k], bi, cv[k]);
            volatile double p = av[k] * bi;
            twice = p + cv[k];
          }
          ASSERT_EQ(out[0].get(i), want)
              << hlo::dtype_name(d) << " element " << i << (scalar_b ? " scalar b" : "")
              << (fusion ? " fused" : " alone");
          rounded_twice_differs += twice != want;
        }
        EXPECT_GT(rounded_twice_differs, n / 50) << hlo::dtype_name(d);
      }
    }
  }
}

}  // namespace
}  // namespace vtrn::runtime

namespace vtrn::runtime {
namespace {

// Up to |count| float32 inputs in [-10, 10] whose exp SLEEF and libm round differently, found by
// scanning in steps of 0.001.
std::vector<double> inputs_sleef_and_libm_round_apart(std::size_t count) {
  std::vector<float> scan(20001);
  for (std::size_t i = 0; i < scan.size(); ++i) scan[i] = -10.0f + 0.001f * static_cast<float>(i);
  std::vector<float> scanned(scan.size());
  vecmath::apply(vecmath::Fn::kExp, scan.data(), scanned.data(),
                 static_cast<std::int64_t>(scan.size()));
  std::vector<double> found;
  for (std::size_t i = 0; i < scan.size() && found.size() < count; ++i)
    if (scanned[i] != std::exp(scan[i])) found.push_back(scan[i]);
  return found;
}

// An exponential marked sleef (softmax's) takes SLEEF's vector exp for every element, a tail
// included; an unmarked one gives a loop's last len % 32 elements libm's exp (the tail of
// ATen's cpu_kernel_vec ops). 37 elements: 32 in vector steps, a tail of 5. The references are
// vecmath's and libm's own results on the same inputs.
TEST(ExecutorTest, ASleefExponentialTakesTheVectorFunctionForEveryElement) {
  const std::int64_t n = 37;
  const test::TensorType t(test::DType::kF32, {n});
  // The tail's inputs are ones where SLEEF and libm round differently.
  std::vector<double> xs;
  for (std::int64_t i = 0; i < 32; ++i) xs.push_back(-9.0 + 0.37 * static_cast<double>(i));
  for (double v : inputs_sleef_and_libm_round_apart(static_cast<std::size_t>(n) - 32))
    xs.push_back(v);
  ASSERT_EQ(xs.size(), static_cast<std::size_t>(n)) << "SLEEF and libm agree on the whole scan";
  const HostTensor input = HostTensor::from_doubles(t, xs);
  std::vector<float> sleef(static_cast<std::size_t>(n));
  vecmath::apply(vecmath::Fn::kExp, input.as<float>(), sleef.data(), n);
  for (bool marked : {true, false}) {
    test::Builder b;
    test::Value x = b.param(t);
    const auto out = test::run(b.finish({marked ? b.sleef_exp(x) : b.exp(x)}), {input});
    for (std::int64_t i = 0; i < n; ++i) {
      const float want =
          marked || i < 32 ? sleef[static_cast<std::size_t>(i)] : std::exp(input.as<float>()[i]);
      ASSERT_EQ(static_cast<float>(out[0].get(i)), want) << i << (marked ? " marked" : "");
    }
  }
}

// Sigmoid and silu as the lowerings write them (negate, exponential, add 1, divide: ATen's
// vectorized formulas) run as one instruction in a fused loop; each element keeps the bits of
// the four steps rounded in turn: SLEEF's exp on whole vector steps, libm's on the last
// len % step (or SLEEF's throughout for an exponential marked sleef). 77 elements: a tail of 13
// whose sigmoid and silu differ with SLEEF's exp and with libm's, and 0, -0, an exp that overflows,
// an infinity and a NaN among the rest. The same loops with the exponential also returned, silu's
// gradient around the sigmoid (one instruction too), and each op run alone give the same bits.
TEST(ExecutorTest, SigmoidAndSiluKeepTheRoundingOfEachStep) {
  const std::int64_t n = 77;
  const TensorType t(DType::kF32, {n});
  std::vector<double> xs = {0.0, -0.0, -100.0, 100.0, -INFINITY, INFINITY, NAN};
  while (xs.size() < 64) xs.push_back(-9.0 + 0.29 * static_cast<double>(xs.size()));
  // The tail: inputs whose sigmoid and silu both differ with SLEEF's exp and with libm's.
  std::vector<float> scan(20001), scan_neg(scan.size()), scan_sleef(scan.size());
  for (std::size_t i = 0; i < scan.size(); ++i) {
    scan[i] = -10.0f + 0.001f * static_cast<float>(i);
    scan_neg[i] = -scan[i];
  }
  vecmath::apply(vecmath::Fn::kExp, scan_neg.data(), scan_sleef.data(),
                 static_cast<std::int64_t>(scan.size()));
  for (std::size_t i = 0; i < scan.size() && xs.size() < 77; ++i) {
    const float libm = std::exp(scan_neg[i]);
    if (1.0f / (1.0f + scan_sleef[i]) != 1.0f / (1.0f + libm) &&
        scan[i] / (1.0f + scan_sleef[i]) != scan[i] / (1.0f + libm))
      xs.push_back(scan[i]);
  }
  ASSERT_EQ(xs.size(), static_cast<std::size_t>(n)) << "SLEEF and libm agree on the whole scan";
  std::vector<double> gs(xs.size());
  for (std::size_t i = 0; i < gs.size(); ++i) gs[i] = 0.75 - 0.01 * static_cast<double>(i);
  const HostTensor x_in = HostTensor::from_doubles(t, xs), g_in = HostTensor::from_doubles(t, gs);
  const float* x = x_in.as<float>();
  std::vector<float> neg(xs.size()), sleef(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) neg[i] = -x[i];
  vecmath::apply(vecmath::Fn::kExp, neg.data(), sleef.data(), n);
  enum Shape { kSigmoid, kSilu, kExpAlsoReturned, kSiluBackward };
  for (int lanes : {16, 8}) {
    aten_sum::set_vector_lanes(lanes);
    const std::int64_t tail_from = n - n % (2 * lanes);
    for (bool marked : {false, true})
      for (Shape shape : {kSigmoid, kSilu, kExpAlsoReturned, kSiluBackward}) {
        Builder b;
        const Value xv = b.param(t), gv = b.param(t);
        const Value one = b.broadcast_to(b.constant(hlo::Literal::scalar(DType::kF32, 1.0)), {n});
        const Value e = marked ? b.sleef_exp(b.neg(xv)) : b.exp(b.neg(xv));
        const Value s = b.div(shape == kSilu ? xv : one, b.add(one, e));
        std::vector<Value> results = {s};
        if (shape == kExpAlsoReturned) results.push_back(e);
        if (shape == kSiluBackward)  // (g * s) * (x * (1 - s) + 1)
          results = {b.mul(b.mul(gv, s), b.fma(xv, b.sub(one, s), one))};
        const hlo::Module m = b.finish(results);
        for (bool fusion : {true, false}) {
          const auto out = run(m, {x_in, g_in}, fusion);
          for (std::int64_t i = 0; i < n; ++i) {
            const auto u = static_cast<std::size_t>(i);
            const float ei = marked || i < tail_from ? sleef[u] : std::exp(neg[u]);
            const float si = (shape == kSilu ? x[i] : 1.0f) / (1.0f + ei);
            const float gi = g_in.as<float>()[i];
            const float want =
                shape == kSiluBackward ? (gi * si) * std::fma(x[i], 1.0f - si, 1.0f) : si;
            const std::string where = "lanes " + std::to_string(lanes) + " shape " +
                                      std::to_string(shape) + (marked ? " sleef" : "") +
                                      (fusion ? " fused" : " alone") + " element " +
                                      std::to_string(i) + " x " + std::to_string(x[i]);
            auto same = [](float got, float w) {
              return std::isnan(w) ? std::isnan(got) : got == w;
            };
            ASSERT_PRED2(same, static_cast<float>(out[0].get(i)), want) << where;
            if (shape == kExpAlsoReturned)
              ASSERT_PRED2(same, static_cast<float>(out[1].get(i)), ei) << where;
          }
        }
      }
  }
  aten_sum::set_vector_lanes(8);
}

// ATen gives an elementwise op over n >= 32768 elements to min(threads, ceil(n / 32768)) threads
// in ranges of ceil(n / ranges) elements (at::parallel_for, grain 32768), and each range's
// vector loop ends in a scalar tail of len % step elements (a step is two vectors: of 16 lanes
// on an AVX-512 torch, of 8 elsewhere): libm's exp, not SLEEF's. With 16 lanes a loop over
// 100003 elements on 2 threads has two tails (49984..50001, 99986..100002), on one thread one
// (100000..100002); 40000 elements on 2 threads, run on one, still two. Every input is one
// where SLEEF and libm round differently.
TEST(ExecutorTest, ALargeLoopsScalarTailsEndAtensThreadRanges) {
  const std::vector<double> differing = inputs_sleef_and_libm_round_apart(41);
  ASSERT_EQ(differing.size(), 41u) << "SLEEF and libm agree on the whole scan";
  const int threads_before = executor_threads();
  for (std::int64_t n : {100003, 40000}) {
    const test::TensorType t(test::DType::kF32, {n});
    std::vector<double> xs(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = differing[i % differing.size()];
    const HostTensor input = HostTensor::from_doubles(t, xs);
    std::vector<float> sleef(static_cast<std::size_t>(n));
    vecmath::apply(vecmath::Fn::kExp, input.as<float>(), sleef.data(), n);
    test::Builder b;
    const hlo::Module m = b.finish({b.exp(b.param(t))});
    for (int lanes : {16, 8})
      for (int threads : {1, 2}) {
        set_executor_threads(threads);
        aten_sum::set_vector_lanes(lanes);
        const std::int64_t ranges = std::min<std::int64_t>(threads, (n + 32767) / 32768);
        const std::int64_t range = (n + ranges - 1) / ranges;
        std::vector<char> tail(static_cast<std::size_t>(n), 0);
        for (std::int64_t lo = 0; lo < n; lo += range) {
          const std::int64_t hi = std::min(n, lo + range);
          for (std::int64_t i = hi - (hi - lo) % (2 * lanes); i < hi; ++i)
            tail[static_cast<std::size_t>(i)] = 1;
        }
        const auto out = test::run(m, {input});
        for (std::int64_t i = 0; i < n; ++i) {
          const auto u = static_cast<std::size_t>(i);
          const float want = tail[u] ? std::exp(input.as<float>()[i]) : sleef[u];
          ASSERT_EQ(static_cast<float>(out[0].get(i)), want)
              << "n " << n << " threads " << threads << " lanes " << lanes << " element " << i;
        }
      }
  }
  set_executor_threads(threads_before);
  aten_sum::set_vector_lanes(8);
}

}  // namespace
}  // namespace vtrn::runtime
