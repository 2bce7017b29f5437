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
  auto value_of = [&](std::uint32_t bits) { return d == DType::kBF16 ? hlo::bf16_to_f32(static_cast<std::uint16_t>(bits)) : hlo::f16_to_f32(static_cast<std::uint16_t>(bits)); };
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

std::vector<HostTensor> run(const hlo::Module& m, const std::vector<HostTensor>& in, bool fusion = true) {
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
    {OpKind::kSign, true, -4, 4, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }},
    {OpKind::kFloor, true, -4, 4, [](double x) { return std::floor(x); }},
    {OpKind::kCeil, true, -4, 4, [](double x) { return std::ceil(x); }},
    {OpKind::kRoundEven, true, -4, 4, [](double x) { return x - std::floor(x) == 0.5 ? 2 * std::round(x / 2) : std::round(x); }},
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
    case DType::kF64: return 1e-13;
    case DType::kF32: return 4e-7;
    case DType::kBF16: return 1.0 / 128;
    default: return 1.0 / 1024;
  }
}

void expect_close(DType d, bool exact, double got, double want, const std::string& what) {
  if (exact) {
    const double r = ref_round(d, want);
    ASSERT_TRUE(got == r || (std::isnan(got) && std::isnan(r))) << what << ": got " << got << " want " << r;
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
                     std::string(hlo::op_name(c.kind)) + " " + std::string(hlo::dtype_name(d)) + " x=" + std::to_string(xs[i]));
    }
  }
}

struct BinaryCase {
  OpKind kind;
  bool exact;
  std::function<double(double, double)> f;
};

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
  };
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
    for (const BinaryCase& c : cases) {
      Builder b;
      TensorType t(d, {7, 9});
      Value x = b.param(t), y = b.param(t);
      hlo::Module m = b.finish({b.binary(c.kind, x, y)});
      const auto xs = random_values(63, 0.1, 4, 2, d), ys = random_values(63, 0.5, 3, 3, d);
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
      const auto xs = random_values(40, u ? 0 : -100, 100, 4, d), ys = random_values(40, 1, 9, 5, d);
      auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys)});
      for (std::size_t i = 0; i < xs.size(); ++i) {
        std::int64_t want = f(static_cast<std::int64_t>(xs[i]), static_cast<std::int64_t>(ys[i]));
        // Wrap to the dtype's width.
        const int bits = 8 * hlo::dtype_size(d);
        if (bits < 64) {
          want &= (std::int64_t{1} << bits) - 1;
          if (!u && want >= (std::int64_t{1} << (bits - 1))) want -= std::int64_t{1} << bits;
        }
        ASSERT_EQ(static_cast<std::int64_t>(out[0].get(static_cast<std::int64_t>(i))), want) << hlo::op_name(k) << " " << hlo::dtype_name(d);
      }
    }
  }
  // Division by zero gives -1; i8 overflow wraps.
  Builder b;
  TensorType t(DType::kI8, {2});
  Value x = b.param(t), y = b.param(t);
  hlo::Module m = b.finish({b.div(x, y), b.add(x, x)});
  auto out = run(m, {HostTensor::from_doubles(t, {7, 100}), HostTensor::from_doubles(t, {0, 3})});
  EXPECT_EQ(out[0].get(0), -1);
  EXPECT_EQ(out[0].get(1), 33);
  EXPECT_EQ(out[1].get(1), -56);  // 200 - 256
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

TEST(ExecutorTest, Convert) {
  Builder b;
  TensorType t(DType::kF32, {8});
  Value x = b.param(t);
  hlo::Module m = b.finish({b.convert(x, DType::kBF16), b.convert(x, DType::kI32), b.convert(x, DType::kF16), b.convert(x, DType::kPred),
                            b.convert(x, DType::kU8)});
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
      for (hlo::ReduceKind k : {hlo::ReduceKind::kAdd, hlo::ReduceKind::kMax, hlo::ReduceKind::kMin}) {
        Builder b;
        TensorType t(d, shape);
        Value x = b.param(t);
        const double init = k == hlo::ReduceKind::kAdd ? 0 : k == hlo::ReduceKind::kMax ? -1e9 : 1e9;
        hlo::Module m = b.finish({b.reduce(x, b.scalar(d, init), dims, k)});
        const auto xs = random_values(120, -10, 10, 11, d);
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
              a = k == hlo::ReduceKind::kAdd ? a + v : k == hlo::ReduceKind::kMax ? std::max(a, v) : std::min(a, v);
            }
        for (std::int64_t o = 0; o < on; ++o) {
          if (k == hlo::ReduceKind::kAdd)
            ASSERT_NEAR(out[0].get(o), acc[o], (d == DType::kBF16 ? 0.02 : 1e-4) * std::max(1.0, std::fabs(acc[o])));
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
          if (d == DType::kI32 || d == DType::kF64) ASSERT_NEAR(got, s, 1e-12);
          else ASSERT_NEAR(got, s, tolerance(d) * 8 * std::max(1.0, std::fabs(s)));
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
    for (int j = 0; j < 4; ++j) EXPECT_EQ(out[6].get(i * 4 + j), (i == 2 && (j == 1 || j == 2)) ? X(0, j - 1) : X(i, j));
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
  auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(it, is), HostTensor::from_doubles(TensorType(DType::kF32, {4, 3}), us)});
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(out[0].get(r * 3 + c), xs[std::min<int>(static_cast<int>(is[r]), 4) * 3 + c]);
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

TEST(ExecutorTest, FiveOpChainFusesIntoOneKernelWithSameResults) {
  for (DType d : {DType::kF32, DType::kBF16}) {
    Builder b;
    TensorType t(d, {300, 70});
    Value x = b.param(t), y = b.param(t);
    // ((x * y + x) - 0.5) max 0, then exp: 5 elementwise ops (the constant is broadcast).
    Value half = b.broadcast_in_dim(b.scalar(d, 0.5), t.dims, {});
    Value v = b.exp(b.max(b.sub(b.add(b.mul(x, y), x), half), b.broadcast_in_dim(b.scalar(d, 0), t.dims, {})));
    hlo::Module m = b.finish({v});
    compiler::Executable fused = compiler::compile(m);
    int fused_kernels = 0;
    for (const auto& k : fused.kernels) fused_kernels += k.kind != compiler::KernelKind::kConstant;
    EXPECT_EQ(fused_kernels, 1);
    compiler::CompileOptions off;
    off.fusion = false;
    compiler::Executable unfused = compiler::compile(m, off);
    EXPECT_GE(unfused.kernels.size(), 5u);
    const auto xs = random_values(t.num_elements(), -1, 1, 21, d), ys = random_values(t.num_elements(), -1, 1, 22, d);
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
    for (int c = 0; c < 256; ++c) ASSERT_NEAR(out[0].get(r * 256 + c), std::exp(xs[r * 256 + c] - mxv) / sum, 1e-6);
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
