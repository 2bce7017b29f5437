// The layer norm backward call (runtime/aten_layer_norm_backward.h): without an installed
// kernel its formula, checked against central differences of the layer norm in float64; with
// one, the call hands it the buffers, the flags and the thread budget, and zeroes the gradient
// of a parameter the forward did not have. Bit parity with the CPU is
// tests/python/test_layer_norm_bits.py's.
#include "vtrn/runtime/aten_layer_norm_backward.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vtrn/compiler/aten_layer_norm_backward.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

constexpr double kEps = 1e-5;

// sum_j dy[j] * layer_norm(x)[j] * gamma[j] of one row, in float64.
double weighted_output(const std::vector<double>& x, const std::vector<double>& dy,
                       const std::vector<double>& gamma) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  const double rstd = 1 / std::sqrt(var / static_cast<double>(x.size()) + kEps);
  double f = 0;
  for (std::size_t j = 0; j < x.size(); ++j) f += dy[j] * gamma[j] * (x[j] - mean) * rstd;
  return f;
}

std::vector<HostTensor> backward(const std::vector<HostTensor>& in, bool gamma, bool beta) {
  Builder b;
  std::vector<hlo::Value> operands;
  for (const HostTensor& t : in) operands.push_back(b.param(t.type));
  const TensorType column(DType::kF32, {in[0].type.dims[1]});
  return run(b.finish(b.custom_call(std::string(compiler::kAtenLayerNormBackwardTarget), operands,
                                    {in[0].type, column, column},
                                    compiler::aten_layer_norm_backward_config({gamma, beta}))),
             in);
}

std::vector<HostTensor> operands(std::int64_t rows, std::int64_t n, bool gamma) {
  const TensorType xt(DType::kF32, {rows, n}), st(DType::kF32, {rows}), ct(DType::kF32, {n});
  const HostTensor x = HostTensor::from_doubles(xt, random_values(rows * n, -2, 2, 1, DType::kF32));
  std::vector<double> mean(static_cast<std::size_t>(rows)), rstd(mean.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (std::int64_t j = 0; j < n; ++j) m += x.get(r * n + j);
    m /= static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j) v += (x.get(r * n + j) - m) * (x.get(r * n + j) - m);
    mean[r] = m;
    rstd[r] = 1 / std::sqrt(v / static_cast<double>(n) + kEps);
  }
  std::vector<HostTensor> in{
      HostTensor::from_doubles(xt, random_values(rows * n, -1, 1, 2, DType::kF32)), x,
      HostTensor::from_doubles(st, mean), HostTensor::from_doubles(st, rstd)};
  if (gamma) in.push_back(HostTensor::from_doubles(ct, random_values(n, 0.5, 1.5, 3, DType::kF32)));
  return in;
}

TEST(AtenLayerNormBackwardTest, WithoutAnInstalledKernelTheFormulaGivesTheGradients) {
  aten_layer_norm_backward::install(nullptr);
  const std::int64_t rows = 3, n = 20;
  const std::vector<HostTensor> in = operands(rows, n, true);
  const std::vector<HostTensor> got = backward(in, true, true);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<double> x(static_cast<std::size_t>(n)), dy(x.size()), g(x.size());
    for (std::int64_t j = 0; j < n; ++j)
      x[j] = in[1].get(r * n + j), dy[j] = in[0].get(r * n + j), g[j] = in[4].get(j);
    for (std::int64_t j = 0; j < n; ++j) {
      const double h = 1e-5;
      std::vector<double> up = x, down = x;
      up[j] += h, down[j] -= h;
      const double numeric = (weighted_output(up, dy, g) - weighted_output(down, dy, g)) / (2 * h);
      EXPECT_NEAR(got[0].get(r * n + j), numeric, 1e-4) << "row " << r << " element " << j;
    }
  }
  for (std::int64_t j = 0; j < n; ++j) {
    double dgamma = 0, dbeta = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const double xhat = (in[1].get(r * n + j) - in[2].get(r)) * in[3].get(r);
      dgamma += in[0].get(r * n + j) * xhat;
      dbeta += in[0].get(r * n + j);
    }
    EXPECT_NEAR(got[1].get(j), dgamma, 1e-5);
    EXPECT_NEAR(got[2].get(j), dbeta, 1e-5);
  }
}

TEST(AtenLayerNormBackwardTest, AnInstalledKernelGetsTheBuffersAndTheThreadBudget) {
  static aten_layer_norm_backward::Call seen;
  aten_layer_norm_backward::install([](const aten_layer_norm_backward::Call& c) {
    seen = c;
    std::fill_n(c.dx, c.rows * c.n, 2.0f);
    if (c.beta) std::fill_n(c.dbeta, c.n, 3.0f);
  });
  const int threads = executor_threads();
  set_executor_threads(2);
  const std::vector<HostTensor> in = operands(4, 9, false);
  const std::vector<HostTensor> got = backward(in, false, true);
  set_executor_threads(threads);
  EXPECT_EQ(seen.rows, 4);
  EXPECT_EQ(seen.n, 9);
  EXPECT_EQ(seen.gamma, nullptr);
  EXPECT_TRUE(seen.beta);
  EXPECT_EQ(seen.threads, 2);
  EXPECT_EQ(got[0].get(0), 2.0);
  EXPECT_EQ(got[1].get(8), 0.0);  // no gamma: a zero gradient
  EXPECT_EQ(got[2].get(8), 3.0);
  aten_layer_norm_backward::install(nullptr);
}

}  // namespace
}  // namespace vtrn::runtime
