// The GELU calls (runtime/aten_gelu.h): without an installed function, ATen's scalar formula,
// checked against float64 erf by hand; with one, the call hands it the whole buffers; and the
// operand check. Bit parity with the CPU's oneDNN kernel is tests/python/test_gelu_bits.py's.
#include "vtrn/runtime/aten_gelu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string_view>
#include <vector>

#include "vtrn/compiler/aten_gelu.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

hlo::Module gelu_module(bool backward, std::int64_t n, bool tanh = false) {
  Builder b;
  const TensorType t(DType::kF32, {n});
  std::vector<hlo::Value> operands{b.param(t)};
  if (backward) operands.push_back(b.param(t));
  const std::string_view target =
      tanh ? (backward ? compiler::kAtenGeluTanhBackwardTarget : compiler::kAtenGeluTanhTarget)
           : (backward ? compiler::kAtenGeluBackwardTarget : compiler::kAtenGeluTarget);
  return b.finish(b.custom_call(std::string(target), operands, {t}, ""));
}

TEST(AtenGeluTest, WithoutAnInstalledKernelTheScalarFormulaRuns) {
  aten_gelu::install(nullptr, nullptr);
  const std::int64_t n = 101;
  const std::vector<double> xs = random_values(n, -4, 4, 3, DType::kF32);
  const std::vector<double> gs = random_values(n, -1, 1, 4, DType::kF32);
  const TensorType t(DType::kF32, {n});
  const HostTensor x = HostTensor::from_doubles(t, xs), g = HostTensor::from_doubles(t, gs);
  const std::vector<HostTensor> y = run(gelu_module(false, n), {x});
  const std::vector<HostTensor> dx = run(gelu_module(true, n), {g, x});
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x.get(i);
    const double cdf = 0.5 * (1 + std::erf(v / std::sqrt(2.0)));
    const double pdf = std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
    EXPECT_NEAR(y[0].get(i), v * cdf, 1e-6) << v;
    EXPECT_NEAR(dx[0].get(i), g.get(i) * (cdf + v * pdf), 1e-6) << v;
  }
}

// The tanh approximation's fallback, against its formula in float64: 0.5 x (1 + tanh(u)),
// u = sqrt(2 / pi) (x + 0.044715 x^3), and its derivative.
TEST(AtenGeluTest, WithoutAnInstalledKernelTheTanhFormulaRuns) {
  aten_gelu::install(nullptr, nullptr);
  const std::int64_t n = 101;
  const TensorType t(DType::kF32, {n});
  const HostTensor x = HostTensor::from_doubles(t, random_values(n, -4, 4, 6, DType::kF32));
  const HostTensor g = HostTensor::from_doubles(t, random_values(n, -1, 1, 7, DType::kF32));
  const std::vector<HostTensor> y = run(gelu_module(false, n, /*tanh=*/true), {x});
  const std::vector<HostTensor> dx = run(gelu_module(true, n, /*tanh=*/true), {g, x});
  const double beta = std::sqrt(2 / M_PI), kappa = 0.044715;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x.get(i), th = std::tanh(beta * (v + kappa * v * v * v));
    EXPECT_NEAR(y[0].get(i), 0.5 * v * (1 + th), 1e-6) << v;
    const double slope = 0.5 * (1 + th) + 0.5 * v * (1 - th * th) * beta * (1 + 3 * kappa * v * v);
    EXPECT_NEAR(dx[0].get(i), g.get(i) * slope, 1e-6) << v;
  }
}

// An installed pair gets the call's whole buffers and the approximation: here a stand-in that
// writes n - i.
TEST(AtenGeluTest, AnInstalledKernelGetsTheWholeTensor) {
  static std::int64_t seen = 0;
  static aten_gelu::Approximation seen_approximation = aten_gelu::Approximation::kNone;
  aten_gelu::install(
      [](aten_gelu::Approximation a, std::int64_t n, const float*, float* y) {
        seen = n;
        seen_approximation = a;
        for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(n - i);
      },
      [](aten_gelu::Approximation a, std::int64_t n, const float*, const float*, float* dx) {
        seen = -n;
        seen_approximation = a;
        for (std::int64_t i = 0; i < n; ++i) dx[i] = static_cast<float>(i);
      });
  const std::int64_t n = 37;
  const TensorType t(DType::kF32, {n});
  const HostTensor x = HostTensor::from_doubles(t, random_values(n, -1, 1, 5, DType::kF32));
  for (const bool tanh : {false, true}) {
    const auto want = tanh ? aten_gelu::Approximation::kTanh : aten_gelu::Approximation::kNone;
    const std::vector<HostTensor> y = run(gelu_module(false, n, tanh), {x});
    EXPECT_EQ(seen, n);
    EXPECT_EQ(seen_approximation, want);
    const std::vector<HostTensor> dx = run(gelu_module(true, n, tanh), {x, x});
    EXPECT_EQ(seen, -n);
    EXPECT_EQ(seen_approximation, want);
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(y[0].get(i), static_cast<double>(n - i));
      EXPECT_EQ(dx[0].get(i), static_cast<double>(i));
    }
  }
  aten_gelu::install(nullptr, nullptr);
}

TEST(AtenGeluTest, OperandsOfAnotherShapeAreRejected) {
  Builder b;
  const hlo::Module m = b.finish(
      b.custom_call(std::string(compiler::kAtenGeluBackwardTarget),
                    {b.param(TensorType(DType::kF32, {4})), b.param(TensorType(DType::kF32, {5}))},
                    {TensorType(DType::kF32, {4})}, ""));
  try {
    compiler::aten_gelu_elements(m.main, m.main.ops.back());
    FAIL() << "no error";
  } catch (const hlo::Error& e) {
    EXPECT_STREQ(e.what(),
                 "custom_call @vtrn.aten_gelu_backward takes (dy, x) and gives one result, all "
                 "float32 of one shape; got (tensor<4xf32>, tensor<5xf32>) -> (tensor<4xf32>)");
  }
}

}  // namespace
}  // namespace vtrn::runtime
