// One row of ATen's layer norm (runtime/aten_layer_norm.h): the moments of rows worked out by
// hand, and of every length up to three chunk levels against a float64 two-pass reference
// (the order only moves the last bits); and the `custom_call @vtrn.aten_layer_norm` kernel giving
// each row's output, mean and rstd, with and without gamma and beta, on one thread and two.
// Bit parity with the CPU is tests/python/test_layer_norm_bits.py's.
#include "vtrn/runtime/aten_layer_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vtrn/compiler/aten_layer_norm.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

// Shorter than a vector: the scalar Welford pass alone. {1, 2}: m1 = 1, then 1 + 1 / 2 = 1.5;
// m2 = 0, then 0 + 1 * (2 - 1.5) = 0.5; var = 0.5 / 2.
TEST(AtenLayerNormTest, ShortRowsTakeTheScalarPass) {
  const std::vector<float> x{1, 2};
  const aten_layer_norm::Moments m = aten_layer_norm::row_moments(x.data(), 2);
  EXPECT_EQ(m.mean, 1.5f);
  EXPECT_EQ(m.var, 0.25f);
}

// A constant row: every delta after the first is 0 in every lane and level, so the mean is the
// value exactly and the variance 0; y is beta.
TEST(AtenLayerNormTest, ConstantRowsHaveExactMoments) {
  for (std::int64_t n : {7, 8, 128, 1000, 20000}) {
    const std::vector<float> x(static_cast<std::size_t>(n), 0.375f);
    const aten_layer_norm::Moments m = aten_layer_norm::row_moments(x.data(), n);
    EXPECT_EQ(m.mean, 0.375f) << n;
    EXPECT_EQ(m.var, 0.0f) << n;
    std::vector<float> y(x.size()), gamma(x.size(), 2.0f), beta(x.size(), -1.0f);
    float mean, rstd;
    aten_layer_norm::layer_norm_row(x.data(), n, gamma.data(), beta.data(), 1e-5f, y.data(), &mean,
                                    &rstd);
    EXPECT_EQ(rstd, 1.0f / std::sqrt(1e-5f)) << n;
    for (float v : y) ASSERT_EQ(v, -1.0f) << n;
  }
}

// Lengths covering the tail, one chunk, a stack of up to 2^9 chunks and a row past the 8
// in-place levels: within float rounding of the float64 mean and population variance.
TEST(AtenLayerNormTest, MomentsAgreeWithTwoPassFloat64) {
  for (std::int64_t n : {1, 5, 8, 9, 127, 128, 129, 1000, 4096, 65536, 300001}) {
    const std::vector<double> xs = random_values(n, -2, 5, static_cast<unsigned>(n), DType::kF32);
    const std::vector<float> x(xs.begin(), xs.end());
    double mean = 0, var = 0;
    for (float v : x) mean += v;
    mean /= static_cast<double>(n);
    for (float v : x) var += (v - mean) * (v - mean);
    var /= static_cast<double>(n);
    const aten_layer_norm::Moments m = aten_layer_norm::row_moments(x.data(), n);
    EXPECT_NEAR(m.mean, mean, 1e-6 * (1 + std::fabs(mean))) << n;
    EXPECT_NEAR(m.var, var, 1e-5 * (1 + var)) << n;
  }
}

// The call: rows split over threads give each row's layer_norm_row, gamma and beta in any
// combination (beta alone reads its operand in gamma's place).
TEST(AtenLayerNormTest, CallGivesEachRowsNormalization) {
  const int threads_before = executor_threads();
  const std::int64_t rows = 70, n = 1000;
  const std::vector<double> xs = random_values(rows * n, -3, 3, 1, DType::kF32);
  const std::vector<double> gs = random_values(n, 0.5, 1.5, 2, DType::kF32);
  const std::vector<double> bs = random_values(n, -1, 1, 3, DType::kF32);
  for (const bool with_gamma : {false, true})
    for (const bool with_beta : {false, true})
      for (int threads : {1, 2}) {
        set_executor_threads(threads);
        compiler::AtenLayerNormConfig c;
        c.eps = 1e-6f;
        c.gamma = with_gamma;
        c.beta = with_beta;
        const TensorType xt(DType::kF32, {rows, n}), pt(DType::kF32, {n}), st(DType::kF32, {rows});
        Builder b;
        std::vector<hlo::Value> operands{b.param(xt)};
        std::vector<HostTensor> in{HostTensor::from_doubles(xt, xs)};
        if (with_gamma) {
          operands.push_back(b.param(pt));
          in.push_back(HostTensor::from_doubles(pt, gs));
        }
        if (with_beta) {
          operands.push_back(b.param(pt));
          in.push_back(HostTensor::from_doubles(pt, bs));
        }
        const hlo::Module m =
            b.finish(b.custom_call(std::string(compiler::kAtenLayerNormTarget), operands,
                                   {xt, st, st}, compiler::aten_layer_norm_config(c)));
        const std::vector<HostTensor> out = run(m, in);
        const std::vector<float> g(gs.begin(), gs.end()), bv(bs.begin(), bs.end());
        for (std::int64_t r = 0; r < rows; ++r) {
          std::vector<float> x(static_cast<std::size_t>(n)), y(x.size());
          for (std::int64_t i = 0; i < n; ++i)
            x[static_cast<std::size_t>(i)] = static_cast<float>(xs[r * n + i]);
          float mean, rstd;
          aten_layer_norm::layer_norm_row(x.data(), n, with_gamma ? g.data() : nullptr,
                                          with_beta ? bv.data() : nullptr, 1e-6f, y.data(), &mean,
                                          &rstd);
          ASSERT_EQ(out[1].get(r), mean) << r;
          ASSERT_EQ(out[2].get(r), rstd) << r;
          for (std::int64_t i = 0; i < n; ++i)
            ASSERT_EQ(out[0].get(r * n + i), y[static_cast<std::size_t>(i)]) << r << ", " << i;
        }
      }
  set_executor_threads(threads_before);
}

}  // namespace
}  // namespace vtrn::runtime
