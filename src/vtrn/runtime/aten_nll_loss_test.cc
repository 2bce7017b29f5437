// The nll_loss call (runtime/aten_nll_loss.h): ATen's cascade of partial sums, where an add in
// sample order would lose the small terms (values worked by hand), ignored samples, class
// weights, bfloat16 rounding of every step, an empty batch and ATen's out-of-bounds error. Bit
// parity with the CPU is tests/python/test_nll_loss_bits.py's.
#include "vtrn/runtime/aten_nll_loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "vtrn/compiler/aten_nll_loss.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

// x [N, C] with x[b, target[b]] = picked[b] and 0 elsewhere.
std::vector<HostTensor> loss(DType d, const std::vector<double>& picked,
                             std::vector<std::int64_t> target, std::int64_t classes, bool mean,
                             std::optional<std::vector<double>> weight = std::nullopt) {
  const auto n = static_cast<std::int64_t>(picked.size());
  std::vector<double> x(static_cast<std::size_t>(n * classes), 0.0);
  for (std::int64_t b = 0; b < n; ++b)
    if (target[b] >= 0 && target[b] < classes) x[b * classes + target[b]] = picked[b];
  const TensorType xt(d, {n, classes}), tt(DType::kI64, {n}), wt(d, {classes});
  Builder b;
  std::vector<hlo::Value> operands{b.param(xt), b.param(tt)};
  std::vector<HostTensor> in{HostTensor::from_doubles(xt, x), HostTensor(tt)};
  for (std::int64_t i = 0; i < n; ++i) in[1].as<std::int64_t>()[i] = target[i];
  if (weight) {
    operands.push_back(b.param(wt));
    in.push_back(HostTensor::from_doubles(wt, *weight));
  }
  const hlo::Module m = b.finish(b.custom_call(std::string(compiler::kAtenNllLossTarget), operands,
                                               {TensorType(d, {}), TensorType(d, {})},
                                               compiler::aten_nll_loss_config({-100, mean})));
  return run(m, in);
}

TEST(AtenNllLossTest, SamplesSumInAtensCascade) {
  // Sample 0 goes up every level alone; samples 1..16 sum in level 0 and move up at sample 16.
  // In sample order 2^24 + 1 rounds back to 2^24 sixteen times over; the cascade adds 16 once.
  std::vector<double> picked(17, -1.0);
  picked[0] = -16777216.0;
  const std::vector<std::int64_t> target(17, 2);
  const auto sum = loss(DType::kF32, picked, target, 3, false);
  EXPECT_EQ(sum[0].get(0), 16777232.0);
  EXPECT_EQ(sum[1].get(0), 17.0);
  const auto mean = loss(DType::kF32, picked, target, 3, true);
  EXPECT_EQ(mean[0].as<float>()[0], 16777232.0f / 17.0f);
  // bfloat16 rounds every step: 256 + 1 is 256 there, and the cascade gives 256 + 16.
  std::vector<double> small(17, -1.0);
  small[0] = -256.0;
  EXPECT_EQ(loss(DType::kBF16, small, target, 3, false)[0].get(0), 272.0);
}

TEST(AtenNllLossTest, IgnoredSamplesAndClassWeights) {
  const std::vector<double> picked{-1.0, -2.0, -4.0, -8.0};
  const auto mean = loss(DType::kF32, picked, {0, -100, 1, 1}, 2, true);
  EXPECT_EQ(mean[1].get(0), 3.0);  // the samples not ignored
  EXPECT_EQ(mean[0].get(0), 13.0f / 3.0f);
  // Weights 0.5 and 2: loss 1 * 0.5 + 4 * 2 + 8 * 2 over total weight 4.5.
  const auto weighted =
      loss(DType::kF32, picked, {0, -100, 1, 1}, 2, true, std::vector<double>{0.5, 2.0});
  EXPECT_EQ(weighted[1].get(0), 4.5);
  EXPECT_EQ(weighted[0].get(0), 24.5f / 4.5f);
}

TEST(AtenNllLossTest, AnEmptyBatchAndAnOutOfBoundsTarget) {
  EXPECT_TRUE(std::isnan(loss(DType::kF32, {}, {}, 4, true)[0].get(0)));
  EXPECT_EQ(loss(DType::kF32, {}, {}, 4, false)[0].get(0), 0.0);
  try {
    loss(DType::kF32, {-1.0, -1.0}, {0, 7}, 4, true);
    FAIL() << "a target past the classes ran";
  } catch (const ExecError& e) {
    EXPECT_STREQ(e.what(), "Target 7 is out of bounds.");
  }
  EXPECT_THROW(loss(DType::kF32, {-1.0}, {-1}, 4, true), ExecError);
}

}  // namespace
}  // namespace vtrn::runtime
