// The batch norm calls (runtime/aten_batch_norm.h): without installed kernels their formulas,
// checked against values computed here in float64 and the backward against central differences
// of the forward; with installed ones, the calls hand them the buffers, the flags and the
// thread budget. Bit parity with the CPU is tests/python/test_batch_norm_bits.py's.
#include "vtrn/runtime/aten_batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vtrn/compiler/aten_batch_norm.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

constexpr std::int64_t kN = 3, kC = 2, kHW = 5;
constexpr double kEps = 1e-5, kMomentum = 0.25;

std::vector<HostTensor> forward(const std::vector<HostTensor>& in, bool training) {
  Builder b;
  std::vector<hlo::Value> operands;
  for (const HostTensor& t : in) operands.push_back(b.param(t.type));
  const TensorType vector(DType::kF32, {kC});
  return run(b.finish(b.custom_call(
                 std::string(compiler::kAtenBatchNormTarget), operands,
                 {in[0].type, vector, vector, vector, vector},
                 compiler::aten_batch_norm_config({training, kMomentum, kEps, true, true, true},
                                                  /*backward=*/false))),
             in);
}

std::vector<HostTensor> backward(const std::vector<HostTensor>& in, bool training) {
  Builder b;
  std::vector<hlo::Value> operands;
  for (const HostTensor& t : in) operands.push_back(b.param(t.type));
  const TensorType vector(DType::kF32, {kC});
  return run(b.finish(b.custom_call(
                 std::string(compiler::kAtenBatchNormBackwardTarget), operands,
                 {in[0].type, vector, vector},
                 compiler::aten_batch_norm_config({training, 0, kEps, true, false, false},
                                                  /*backward=*/true))),
             in);
}

struct Inputs {
  TensorType xt{DType::kF32, {kN, kC, kHW}}, vt{DType::kF32, {kC}};
  std::vector<double> x = random_values(kN * kC * kHW, -2, 2, 11, DType::kF32);
  std::vector<double> dy = random_values(kN * kC * kHW, -1, 1, 12, DType::kF32);
  std::vector<double> weight{1.5, -0.5}, bias{0.25, 2}, running_mean{0.5, -1}, running_var{2, 0.5};
  HostTensor host(const TensorType& t, const std::vector<double>& v) const {
    return HostTensor::from_doubles(t, v);
  }
  std::vector<double> channel(const std::vector<double>& v, std::int64_t c) const {
    std::vector<double> out;
    for (std::int64_t n = 0; n < kN; ++n)
      for (std::int64_t i = 0; i < kHW; ++i) out.push_back(v[(n * kC + c) * kHW + i]);
    return out;
  }
};

TEST(AtenBatchNormTest, WithoutAnInstalledKernelTheFormulaRuns) {
  aten_batch_norm::install(nullptr, nullptr);
  const Inputs in;
  const std::vector<HostTensor> args{in.host(in.xt, in.x), in.host(in.vt, in.weight),
                                     in.host(in.vt, in.bias), in.host(in.vt, in.running_mean),
                                     in.host(in.vt, in.running_var)};
  for (bool training : {true, false}) {
    const std::vector<HostTensor> got = forward(args, training);
    for (std::int64_t c = 0; c < kC; ++c) {
      const std::vector<double> xs = in.channel(in.x, c);
      const double n = static_cast<double>(xs.size());
      double mean = 0, var = 0;
      for (double v : xs) mean += v / n;
      for (double v : xs) var += (v - mean) * (v - mean) / n;
      if (!training) mean = in.running_mean[c], var = in.running_var[c];
      const double invstd = 1 / std::sqrt(var + kEps);
      EXPECT_NEAR(got[1].get(c), mean, 1e-6);
      EXPECT_NEAR(got[2].get(c), invstd, 1e-5);
      const double new_mean =
          training ? 0.75 * in.running_mean[c] + 0.25 * mean : in.running_mean[c];
      const double new_var =
          training ? 0.75 * in.running_var[c] + 0.25 * var * n / (n - 1) : in.running_var[c];
      EXPECT_NEAR(got[3].get(c), new_mean, 1e-6);
      EXPECT_NEAR(got[4].get(c), new_var, 1e-6);
      for (std::int64_t k = 0; k < kN; ++k)
        for (std::int64_t i = 0; i < kHW; ++i) {
          const std::int64_t at = (k * kC + c) * kHW + i;
          EXPECT_NEAR(got[0].get(at), (in.x[at] - mean) * invstd * in.weight[c] + in.bias[c], 1e-5);
        }
    }
  }
}

// sum(dy * batch_norm(x)) in float64, training or with the running statistics.
double weighted_output(const Inputs& in, const std::vector<double>& x, bool training) {
  double f = 0;
  for (std::int64_t c = 0; c < kC; ++c) {
    const std::vector<double> xs = in.channel(x, c), dys = in.channel(in.dy, c);
    const double n = static_cast<double>(xs.size());
    double mean = 0, var = 0;
    for (double v : xs) mean += v / n;
    for (double v : xs) var += (v - mean) * (v - mean) / n;
    if (!training) mean = in.running_mean[c], var = in.running_var[c];
    for (std::size_t i = 0; i < xs.size(); ++i)
      f += dys[i] * ((xs[i] - mean) / std::sqrt(var + kEps) * in.weight[c] + in.bias[c]);
  }
  return f;
}

TEST(AtenBatchNormTest, WithoutAnInstalledKernelTheBackwardIsTheForwardsDerivative) {
  aten_batch_norm::install(nullptr, nullptr);
  const Inputs in;
  for (bool training : {true, false}) {
    const std::vector<HostTensor> fw =
        forward({in.host(in.xt, in.x), in.host(in.vt, in.weight), in.host(in.vt, in.bias),
                 in.host(in.vt, in.running_mean), in.host(in.vt, in.running_var)},
                training);
    const std::vector<HostTensor> stats =
        training ? std::vector<HostTensor>{fw[1], fw[2]}
                 : std::vector<HostTensor>{in.host(in.vt, in.running_mean),
                                           in.host(in.vt, in.running_var)};
    const std::vector<HostTensor> got = backward({in.host(in.xt, in.dy), in.host(in.xt, in.x),
                                                  in.host(in.vt, in.weight), stats[0], stats[1]},
                                                 training);
    for (std::size_t i = 0; i < in.x.size(); ++i) {
      std::vector<double> up = in.x, down = in.x;
      up[i] += 1e-4, down[i] -= 1e-4;
      const double slope =
          (weighted_output(in, up, training) - weighted_output(in, down, training)) / 2e-4;
      EXPECT_NEAR(got[0].get(static_cast<std::int64_t>(i)), slope, 2e-3) << i;
    }
    for (std::int64_t c = 0; c < kC; ++c) {
      const std::vector<double> xs = in.channel(in.x, c), dys = in.channel(in.dy, c);
      const double mean = stats[0].get(c);
      const double invstd = training ? stats[1].get(c) : 1 / std::sqrt(stats[1].get(c) + kEps);
      double dweight = 0, dbias = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        dweight += dys[i] * (xs[i] - mean) * invstd;
        dbias += dys[i];
      }
      EXPECT_NEAR(got[1].get(c), dweight, 1e-5);
      EXPECT_NEAR(got[2].get(c), dbias, 1e-5);
    }
  }
}

// Installed kernels get the shape, the flags, the thread budget and the running statistics to
// update in place (their copies: the call's results start as the old values).
TEST(AtenBatchNormTest, InstalledKernelsGetTheCall) {
  static aten_batch_norm::Call seen;
  static aten_batch_norm::BackwardCall seen_backward;
  static float old_running_mean = 0, a1 = 0, b1 = 0;  // read while the buffers live
  aten_batch_norm::install(
      [](const aten_batch_norm::Call& c) {
        seen = c;
        old_running_mean = c.running_mean[1];
        c.running_mean[1] = 42;
        c.y[0] = 7;
      },
      [](const aten_batch_norm::BackwardCall& c) {
        seen_backward = c;
        a1 = c.a[1], b1 = c.b[1];
        c.dx[0] = 9;
      });
  const Inputs in;
  const std::vector<HostTensor> got =
      forward({in.host(in.xt, in.x), in.host(in.vt, in.weight), in.host(in.vt, in.bias),
               in.host(in.vt, in.running_mean), in.host(in.vt, in.running_var)},
              true);
  EXPECT_EQ(seen.dims, (std::vector<std::int64_t>{kN, kC, kHW}));
  EXPECT_TRUE(seen.training);
  EXPECT_EQ(seen.momentum, kMomentum);
  EXPECT_EQ(seen.eps, kEps);
  EXPECT_GE(seen.threads, 1);
  EXPECT_NE(seen.weight, nullptr);
  EXPECT_NE(seen.bias, nullptr);
  EXPECT_EQ(old_running_mean, -1.0f);
  EXPECT_EQ(got[3].get(1), 42.0);
  EXPECT_EQ(got[0].get(0), 7.0);
  const std::vector<HostTensor> grads =
      backward({in.host(in.xt, in.dy), in.host(in.xt, in.x), in.host(in.vt, in.weight),
                in.host(in.vt, in.running_mean), in.host(in.vt, in.running_var)},
               false);
  EXPECT_FALSE(seen_backward.training);
  EXPECT_EQ(a1, -1.0f);  // the running mean
  EXPECT_EQ(b1, 0.5f);   // the running variance
  EXPECT_EQ(grads[0].get(0), 9.0);
  aten_batch_norm::install(nullptr, nullptr);
}

}  // namespace
}  // namespace vtrn::runtime
