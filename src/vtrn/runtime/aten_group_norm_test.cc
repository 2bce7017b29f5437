// The group norm calls (runtime/aten_group_norm.h, compiler/aten_group_norm.h): without
// installed kernels their formulas, the forward against values computed here in float64 and
// the backward against central differences of the forward; the operand checks. Bit parity with
// the CPU is tests/python/test_group_norm_bits.py's.
#include "vtrn/runtime/aten_group_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vtrn/compiler/aten_group_norm.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

constexpr std::int64_t kN = 2, kC = 4, kHW = 3, kG = 2;
constexpr double kEps = 1e-5;

struct Inputs {
  TensorType xt{DType::kF32, {kN, kC, kHW}}, vt{DType::kF32, {kC}}, st{DType::kF32, {kN, kG}};
  std::vector<double> x = random_values(kN * kC * kHW, -2, 2, 21, DType::kF32);
  std::vector<double> dy = random_values(kN * kC * kHW, -1, 1, 22, DType::kF32);
  std::vector<double> weight{1.5, -0.5, 2, 0.25}, bias{0.25, 2, -1, 0};
};

std::vector<HostTensor> call(std::string_view target, const std::vector<HostTensor>& in,
                             const std::vector<TensorType>& results, bool backward) {
  Builder b;
  std::vector<hlo::Value> operands;
  for (const HostTensor& t : in) operands.push_back(b.param(t.type));
  const compiler::AtenGroupNormConfig config{kG, kEps, true, true};
  return run(b.finish(b.custom_call(std::string(target), operands, results,
                                    compiler::aten_group_norm_config(config, backward))),
             in);
}

// sum(dy * group_norm(x)) in float64, and the output itself.
double weighted_output(const Inputs& in, const std::vector<double>& x, std::vector<double>* y) {
  const std::int64_t per = kC / kG * kHW;
  double f = 0;
  for (std::int64_t n = 0; n < kN; ++n)
    for (std::int64_t g = 0; g < kG; ++g) {
      const std::int64_t s = (n * kC + g * (kC / kG)) * kHW;
      double mean = 0, var = 0;
      for (std::int64_t j = 0; j < per; ++j) mean += x[s + j] / per;
      for (std::int64_t j = 0; j < per; ++j) var += (x[s + j] - mean) * (x[s + j] - mean) / per;
      for (std::int64_t j = 0; j < per; ++j) {
        const std::int64_t ch = g * (kC / kG) + j / kHW;
        const double v = (x[s + j] - mean) / std::sqrt(var + kEps) * in.weight[ch] + in.bias[ch];
        if (y != nullptr) (*y)[s + j] = v;
        f += in.dy[s + j] * v;
      }
    }
  return f;
}

TEST(AtenGroupNormTest, WithoutAnInstalledKernelTheFormulasRun) {
  aten_group_norm::install(nullptr, nullptr);
  const Inputs in;
  const std::vector<HostTensor> fw =
      call(compiler::kAtenGroupNormTarget,
           {HostTensor::from_doubles(in.xt, in.x), HostTensor::from_doubles(in.vt, in.weight),
            HostTensor::from_doubles(in.vt, in.bias)},
           {in.xt, in.st, in.st}, false);
  std::vector<double> want(in.x.size());
  weighted_output(in, in.x, &want);
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(fw[0].get(static_cast<std::int64_t>(i)), want[i], 1e-5) << i;
  const std::vector<HostTensor> grads =
      call(compiler::kAtenGroupNormBackwardTarget,
           {HostTensor::from_doubles(in.xt, in.dy), HostTensor::from_doubles(in.xt, in.x), fw[1],
            fw[2], HostTensor::from_doubles(in.vt, in.weight)},
           {in.xt, in.vt, in.vt}, true);
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    std::vector<double> up = in.x, down = in.x;
    up[i] += 1e-4, down[i] -= 1e-4;
    const double slope =
        (weighted_output(in, up, nullptr) - weighted_output(in, down, nullptr)) / 2e-4;
    EXPECT_NEAR(grads[0].get(static_cast<std::int64_t>(i)), slope, 2e-3) << i;
  }
  for (std::int64_t ch = 0; ch < kC; ++ch) {
    double dbias = 0;
    for (std::int64_t n = 0; n < kN; ++n)
      for (std::int64_t j = 0; j < kHW; ++j) dbias += in.dy[(n * kC + ch) * kHW + j];
    EXPECT_NEAR(grads[2].get(ch), dbias, 1e-5);
  }
}

TEST(AtenGroupNormTest, ConfigsRoundTripAndOtherCallsAreRejected) {
  for (bool backward : {false, true}) {
    const compiler::AtenGroupNormConfig c{3, 1e-3, true, false};
    const auto back = compiler::parse_aten_group_norm_config(
        compiler::aten_group_norm_config(c, backward), backward);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->groups, 3);
    EXPECT_TRUE(back->weight);
  }
  for (const char* bad : {"", "groups=0;eps=1e-05;weight=0;bias=0",
                          "groups=2.5;eps=1;weight=0;bias=0", "groups=2;eps=1e-05;weight=0"})
    EXPECT_FALSE(compiler::parse_aten_group_norm_config(bad, false).has_value()) << bad;
  // Channels that are not a multiple of the groups.
  Builder b;
  const TensorType x(DType::kF32, {2, 5, 3}), stats(DType::kF32, {2, 2});
  const hlo::Module m = b.finish(
      b.custom_call(std::string(compiler::kAtenGroupNormTarget), {b.param(x)}, {x, stats, stats},
                    compiler::aten_group_norm_config({2, kEps, false, false}, false)));
  try {
    compiler::aten_group_norm_shape(m.main, m.main.ops.back());
    FAIL() << "5 channels in 2 groups were accepted";
  } catch (const hlo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("C a multiple of G"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtrn::runtime
