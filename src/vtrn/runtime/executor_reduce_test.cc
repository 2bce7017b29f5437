// Reductions against references computed here: every kind and layout in every dtype, and the
// accuracy of float sums at lengths up to 2e7 against a long double sum.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/executor_test_util.h"
#include "vtrn/runtime/kernels_reduce.h"

namespace vtrn::runtime {
namespace {

using namespace test;

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

// Max and min along rows long enough to be combined in lanes: the row's max (min) whatever the
// length's remainder, NaN wherever in the row a NaN is, -inf / +inf rows kept.
TEST(ExecutorTest, ReduceMaxMinOfLongRows) {
  for (DType d : {DType::kF32, DType::kF64}) {
    for (std::int64_t len : {31, 32, 33, 64, 100, 128, 257}) {
      const std::int64_t rows = 6;
      TensorType t(d, {rows, len});
      auto xs = random_values(static_cast<std::size_t>(rows * len), -100, 100, 17, d);
      const double nan = std::numeric_limits<double>::quiet_NaN();
      const double inf = std::numeric_limits<double>::infinity();
      xs[static_cast<std::size_t>(1 * len + 0)] = nan;        // first element
      xs[static_cast<std::size_t>(2 * len + len / 2)] = nan;  // a lane's middle
      xs[static_cast<std::size_t>(3 * len + len - 1)] = nan;  // the tail
      for (std::int64_t j = 0; j < len; ++j) xs[static_cast<std::size_t>(4 * len + j)] = -inf;
      xs[static_cast<std::size_t>(5 * len + len - 1)] = 1000;  // the max last
      for (hlo::ReduceKind k : {hlo::ReduceKind::kMax, hlo::ReduceKind::kMin}) {
        const bool is_max = k == hlo::ReduceKind::kMax;
        Builder b;
        Value x = b.param(t);
        hlo::Module m = b.finish({b.reduce(x, b.scalar(d, is_max ? -inf : inf), {1}, k)});
        auto out = run(m, {HostTensor::from_doubles(t, xs)});
        for (std::int64_t r = 0; r < rows; ++r) {
          double want = is_max ? -inf : inf;
          bool has_nan = false;
          for (std::int64_t j = 0; j < len; ++j) {
            const double v = xs[static_cast<std::size_t>(r * len + j)];
            has_nan = has_nan || std::isnan(v);
            want = is_max ? std::max(want, v) : std::min(want, v);
          }
          if (has_nan)
            EXPECT_TRUE(std::isnan(out[0].get(r))) << "len " << len << " row " << r;
          else
            EXPECT_EQ(out[0].get(r), want) << "len " << len << " row " << r;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Accuracy of float sums.
//
// A sum computed in a tree where every element goes through at most D roundings is within
// gamma_D * sum|x_i| of the exact sum, gamma_D = D u / (1 - D u) with u the unit roundoff
// (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., section 4.2). The
// executor's trees (kernels_reduce.h) have
//   D = 12 + floor(log2(n / 128)) for trailing reduced dims (8 per lane, 4 lane levels, the block
//       counter), D = 8 + floor(log2(n / 8)) for any other layout;
// ATen's cascade (SumKernel.cpp multi_row_sum: 4 levels of at least 16) has about 4 n^(1/4):
// aten_roundings() below, 125 at n = 2e7 with AVX2. The tests assert the executor's bound, and
// that it is below ATen's, against a long double sum of the same float inputs; a left-to-right
// float32 sum fails them from n of a few thousand.

int trailing_roundings(std::int64_t n) {
  return 12 +
         (n >= 128 ? static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n / 128))) : 0);
}
int strided_roundings(std::int64_t n) {
  return 8 + static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n / 8)));
}

// ATen's vectorized_inner_sum with 8-lane vectors: 4 interleaved rows of n / 32 elements each
// summed by multi_row_sum (4 levels of 2^max(4, ceil(log2(rows)) / 4) elements, the last level
// taking the rest), then 3 + 3 + 8 additions combining levels, rows and lanes.
int aten_roundings(std::int64_t n) {
  const std::int64_t rows = std::max<std::int64_t>(n / 32, 1);
  const int power =
      std::max(4, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(rows - 1))) / 4);
  const std::int64_t step = std::int64_t{1} << power;
  const std::int64_t top = std::max<std::int64_t>(rows / (step * step * step), 1);
  return static_cast<int>(3 * (step - 1) + (top - 1)) + 3 + 3 + 8;
}

double gamma(int d, double u) { return d * u / (1 - d * u); }

// Input patterns, exactly representable in float32.
enum class Pattern { kOnes, kTenth, kBigSmall, kCancel, kUniform };

std::vector<float> pattern_values(Pattern p, std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    float& x = v[static_cast<std::size_t>(i)];
    switch (p) {
      case Pattern::kOnes:
        x = 1.0f;
        break;
      case Pattern::kTenth:
        x = 0.1f;
        break;
      case Pattern::kBigSmall:  // 1e4, 1e-3, 1e4, ...: the small ones vanish left to right
        x = i % 2 == 0 ? 1e4f : 1e-3f;
        break;
      case Pattern::kCancel:  // +-1e4 alternating plus noise: the sum is the noise
        x = (i % 2 == 0 ? 1e4f : -1e4f) + u(rng);
        break;
      case Pattern::kUniform:
        x = u(rng);
        break;
    }
  }
  return v;
}

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::kOnes:
      return "ones";
    case Pattern::kTenth:
      return "0.1";
    case Pattern::kBigSmall:
      return "1e4/1e-3";
    case Pattern::kCancel:
      return "+-1e4+noise";
    default:
      return "uniform";
  }
}

HostTensor f32_tensor(const Dims& dims, const std::vector<float>& v) {
  HostTensor t(TensorType(DType::kF32, dims));
  std::copy(v.begin(), v.end(), t.as<float>());
  return t;
}

// Runs reduce(x, 0, |reduced|) over a float32 |dims| tensor and checks every output against a
// long double sum of its elements: within gamma_D * sum|x| for the layout's D.
void check_sum_accuracy(const Dims& dims, const Dims& reduced, const std::vector<float>& xs,
                        const std::string& what) {
  Builder b;
  TensorType t(DType::kF32, dims);
  Value x = b.param(t);
  hlo::Module m = b.finish({b.reduce(x, b.scalar(DType::kF32, 0), reduced, hlo::ReduceKind::kAdd)});
  auto out = run(m, {f32_tensor(dims, xs)});
  const kernels::ReduceLayout layout(hlo::ReduceKind::kAdd, dims, reduced);
  const int d =
      layout.trailing ? trailing_roundings(layout.red_n) : strided_roundings(layout.red_n);
  ASSERT_LE(d, aten_roundings(layout.red_n)) << what;
  // Reference: every element's output index from its domain index.
  std::vector<long double> sum(static_cast<std::size_t>(layout.out_n), 0), abs_sum(sum);
  const int rank = static_cast<int>(dims.size());
  std::vector<std::int64_t> idx(dims.size(), 0);
  std::int64_t o = 0;
  for (float v : xs) {
    sum[static_cast<std::size_t>(o)] += v;
    abs_sum[static_cast<std::size_t>(o)] += std::fabs(v);
    for (int k = rank - 1; k >= 0; --k) {
      o += layout.out_strides[k];
      if (++idx[k] < dims[k]) break;
      o -= layout.out_strides[k] * dims[k];
      idx[k] = 0;
    }
  }
  const double bound = gamma(d, std::ldexp(1.0, -24));
  for (std::int64_t i = 0; i < layout.out_n; ++i) {
    const double got = out[0].as<float>()[i];
    const long double want = sum[static_cast<std::size_t>(i)];
    ASSERT_LE(std::fabs(static_cast<long double>(got) - want),
              bound * abs_sum[static_cast<std::size_t>(i)])
        << what << " output " << i << ": got " << got << " want " << static_cast<double>(want)
        << " (" << d << " roundings)";
  }
}

TEST(ExecutorTest, PairwiseSumDoesNotDependOnHowItIsFed) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::int64_t n : {0, 1, 2, 15, 16, 17, 100, 127, 128, 129, 1000, 4096, 100003}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& v : x) v = u(rng);
    const float whole = kernels::PairwiseSum<float>::of(x.data(), n);
    for (int split : {1, 3, 16, 100, 1024}) {
      kernels::PairwiseSum<float> s;
      std::int64_t i = 0, piece = 0;
      while (i < n) {
        const std::int64_t m = std::min<std::int64_t>(n - i, 1 + (piece++ * 7919) % split);
        s.add(x.data() + i, m);
        i += m;
      }
      ASSERT_EQ(s.sum(), whole) << "n " << n << " pieces up to " << split;
    }
  }
}

// The worst inputs for a left-to-right float sum, long enough that it fails: 2e7 ones give
// 2^24 left to right, a million 0.1f are off by 1%.
TEST(ExecutorTest, FloatSumOfLongRowsIsWithinTheCascadeBound) {
  for (Pattern p :
       {Pattern::kOnes, Pattern::kTenth, Pattern::kBigSmall, Pattern::kCancel, Pattern::kUniform}) {
    for (std::int64_t n : {1000, 1000000, 20000000}) {
      const auto xs = pattern_values(p, n);
      check_sum_accuracy({n}, {0}, xs,
                         std::string(pattern_name(p)) + " sum of " + std::to_string(n));
    }
  }
  // The exact cases: every partial sum of ones is an exact integer in the tree.
  Builder b;
  TensorType t(DType::kF32, {20000000});
  Value x = b.param(t);
  hlo::Module m = b.finish({b.reduce(x, b.scalar(DType::kF32, 0), {0}, hlo::ReduceKind::kAdd)});
  auto out = run(m, {f32_tensor({20000000}, pattern_values(Pattern::kOnes, 20000000))});
  EXPECT_EQ(out[0].as<float>()[0], 20000000.0f);
}

// Every layout the reduce has: trailing dims (rows), leading dims (columns), dims {0, 2} of
// three (runs of one output between others), all dims; 2e7 elements in the largest.
TEST(ExecutorTest, FloatSumEveryLayoutIsWithinTheCascadeBound) {
  struct Case {
    Dims dims, reduced;
  };
  const Case cases[] = {
      {{4, 5000000}, {1}},        {{5000000, 4}, {0}},        {{1000000, 20}, {0}},
      {{200, 1000, 100}, {0, 2}}, {{100, 2000, 100}, {0, 1}}, {{20, 1000, 1000}, {1}},
      {{3, 1, 7, 1}, {0, 3}},     {{64, 64, 64}, {0, 1, 2}},  {{1000, 3}, {1}},
  };
  for (const Case& c : cases) {
    std::int64_t n = 1;
    for (std::int64_t d : c.dims) n *= d;
    for (Pattern p : {Pattern::kTenth, Pattern::kBigSmall, Pattern::kCancel}) {
      std::string what = std::string(pattern_name(p)) + " [";
      for (std::int64_t d : c.dims) what += std::to_string(d) + ",";
      what += "] over [";
      for (std::int64_t d : c.reduced) what += std::to_string(d) + ",";
      check_sum_accuracy(c.dims, c.reduced, pattern_values(p, n), what + "]");
    }
  }
}

// A transposed operand (a non-contiguous tensor in PyTorch) is copied by its own kernel, then
// reduced like any other.
TEST(ExecutorTest, FloatSumOfATransposedOperand) {
  const Dims dims{3000, 2000};
  const auto xs = pattern_values(Pattern::kTenth, 6000000);
  Builder b;
  Value x = b.param(TensorType(DType::kF32, dims));
  Value s = b.reduce(b.transpose(x, {1, 0}), b.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);
  auto out = run(b.finish({s}), {f32_tensor(dims, xs)});
  // Each output sums 3000 copies of 0.1f.
  const long double want = 3000.0L * 0.1f;
  const double bound =
      gamma(trailing_roundings(3000), std::ldexp(1.0, -24)) * static_cast<double>(want);
  for (int i = 0; i < 2000; ++i) ASSERT_LE(std::fabs(out[0].as<float>()[i] - want), bound) << i;
}

// bfloat16 and float16 values are summed in float32 (ATen's acc_type on CPU) and the result
// rounded once; float64 sums get the same trees with u = 2^-53.
TEST(ExecutorTest, ReducedPrecisionAndDoubleSumsAreAccurate) {
  const std::int64_t n = 200000;  // float16 sums stay below its largest value, 65504
  for (DType d : {DType::kBF16, DType::kF16}) {
    Builder b;
    TensorType t(d, {n});
    Value x = b.param(t);
    hlo::Module m = b.finish(
        {b.reduce(b.convert(x, DType::kF32), b.scalar(DType::kF32, 0), {0}, hlo::ReduceKind::kAdd),
         b.reduce(x, b.scalar(d, 0), {0}, hlo::ReduceKind::kAdd)});
    const double v = ref_round(d, 0.1);
    auto out = run(m, {HostTensor::from_doubles(t, std::vector<double>(n, v))});
    const double want = v * n;  // exact in double
    EXPECT_LE(std::fabs(out[0].get(0) - want),
              gamma(trailing_roundings(n), std::ldexp(1.0, -24)) * want)
        << hlo::dtype_name(d);
    // Rounded once to d from the float32 sum: within half an ulp of d plus the float32 error.
    EXPECT_EQ(out[1].get(0), ref_round(d, out[0].get(0))) << hlo::dtype_name(d);
  }
  Builder b;
  TensorType t(DType::kF64, {n});
  Value x = b.param(t);
  hlo::Module m = b.finish({b.reduce(x, b.scalar(DType::kF64, 0), {0}, hlo::ReduceKind::kAdd)});
  auto out = run(m, {HostTensor::from_doubles(t, std::vector<double>(n, 0.1))});
  EXPECT_LE(std::fabs(static_cast<long double>(out[0].get(0)) - 0.1L * n),
            gamma(trailing_roundings(n), std::ldexp(1.0, -53)) * 0.1 * n);
}

// The fused loop folds chunks into the same tree on one thread or two, and the same tree as
// the unfused reduce: results are bit-identical.
TEST(ExecutorTest, FloatSumIsIdenticalOnOneAndTwoThreadsAndFusedOrNot) {
  const Dims dims{64, 100003};
  const auto xs = pattern_values(Pattern::kCancel, 64 * 100003);
  Builder b;
  TensorType t(DType::kF32, dims);
  Value x = b.param(t);
  Value s = b.reduce(b.mul(x, x), b.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);
  hlo::Module m = b.finish({s});
  const hlo::Block& blk = m.main;
  std::vector<const hlo::Literal*> constant_of(blk.types.size(), nullptr);
  std::vector<int> ops;
  for (std::size_t i = 0; i < blk.ops.size(); ++i) {
    if (blk.ops[i].kind == OpKind::kConstant)
      constant_of[blk.ops[i].results[0]] = &blk.ops[i].literal;
    else
      ops.push_back(static_cast<int>(i));
  }
  kernels::FusedProgram program(blk, ops, constant_of);
  HostTensor in = f32_tensor(dims, xs);
  std::vector<kernels::Buf> values(blk.types.size());
  values[blk.args[0]].ptr = in.data.data();
  std::vector<float> one(64), two(64);
  program.run(values, reinterpret_cast<std::uint8_t*>(one.data()), 1);
  program.run(values, reinterpret_cast<std::uint8_t*>(two.data()), 2);
  EXPECT_EQ(one, two);
  auto unfused = run(m, {in}, /*fusion=*/false);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(unfused[0].as<float>()[i], one[i]) << i;
}

// torch.sum over leading dims of a contiguous float32 tensor takes each column in ATen's order
// (vectorized_outer_sum): every column of a group of 32 (of 4 under 8 columns) adds its rows
// in turn through levels that carry every 16 rows; each column after the last whole group
// deals its rows to 4 partial sums. Row 0 is 2^24 and the other 31 rows are 1, so the order
// shows: in turn, the 15 ones of the first 16 rows are lost (2^24 + 1 rounds to 2^24) and the
// next 16 add up to 16 before they meet 2^24: 2^24 + 16. Dealt to 4 partials, 2^24's partial
// loses its 7 ones, the others hold 8 each: 2^24 + 8 + 8 + 8. (torch.ones(32, 33) with row 0
// set to 2**24, .sum(0): 16777232 for columns 0..31, 16777240 for column 32.)
TEST(ExecutorTest, AColumnSumTakesAtensOrderForEachColumn) {
  constexpr float kBig = 16777216.0f;
  struct Case {
    Dims shape, reduced;
    std::int64_t grouped;  // columns in whole groups
  };
  for (const Case& c : {Case{{32, 33}, {0}, 32}, Case{{32, 5}, {0}, 4}, Case{{3, 32, 33}, {1}, 32},
                        Case{{32, 1, 40}, {0, 1}, 32}}) {
    std::int64_t n = 1;
    for (std::int64_t d : c.shape) n *= d;
    const std::int64_t width = c.shape.back();
    const std::int64_t rows = c.shape[static_cast<std::size_t>(c.reduced[0])];
    std::vector<float> xs(static_cast<std::size_t>(n), 1.0f);
    for (std::int64_t e = 0; e < n; ++e)
      if (e / width % rows == 0) xs[static_cast<std::size_t>(e)] = kBig;
    Builder b;
    const Value x = b.param(TensorType(DType::kF32, c.shape));
    const hlo::Module m =
        b.finish({b.reduce(x, b.scalar(DType::kF32, 0), c.reduced, hlo::ReduceKind::kAdd, true)});
    for (bool fusion : {true, false}) {
      const auto out = run(m, {f32_tensor(c.shape, xs)}, fusion);
      ASSERT_EQ(out[0].type.num_elements(), n / rows);
      for (std::int64_t o = 0; o < n / rows; ++o)
        ASSERT_EQ(out[0].as<float>()[o], o % width < c.grouped ? kBig + 16 : kBig + 24)
            << "shape " << c.shape.size() << "d, width " << width << ", output " << o
            << (fusion ? " fused" : " alone");
    }
  }
}

}  // namespace
}  // namespace vtrn::runtime
