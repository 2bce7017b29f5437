// The values of CHLO decompositions (chlo.h) and of reduces with any reducer region, as JAX
// prints them, against the C library and against results computed by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "vtrn/hlo/parser.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime::test {
namespace {

std::vector<HostTensor> run_text(const std::string& text, const std::vector<HostTensor>& in) {
  return run(hlo::parse_module(text), in);
}

std::string unary(const std::string& op, int n) {
  const std::string t = "tensor<" + std::to_string(n) + "xf32>";
  return "func.func @main(%x: " + t + ") -> " + t + " {\n  %0 = " + op + " %x : " + t + " -> " + t +
         "\n  return %0 : " + t + "\n}\n";
}

double erfinv_ref(double y) {  // Newton on erf, from a bisection start
  double lo = -6, hi = 6;
  for (int i = 0; i < 200; ++i) (std::erf((lo + hi) / 2) < y ? lo : hi) = (lo + hi) / 2;
  return (lo + hi) / 2;
}

// digamma by recurrence up to x >= 10, then the asymptotic series; reflected below 1/2.
double digamma_ref(double x) {
  if (x < 0.5) return digamma_ref(1 - x) - M_PI / std::tan(M_PI * x);
  double r = 0;
  for (; x < 10; x += 1) r -= 1 / x;
  const double f = 1 / (x * x);
  return r + std::log(x) - 0.5 / x -
         f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))));
}

TEST(ChloExecTest, UnaryOpsMatchTheCLibrary) {
  struct Case {
    const char* op;
    double (*ref)(double);
    double lo, hi, rtol, atol;
  };
  const Case cases[] = {
      {"chlo.erf", [](double x) { return std::erf(x); }, -5, 5, 4e-6, 1e-7},
      {"chlo.erfc", [](double x) { return std::erfc(x); }, -5, 9, 1e-5, 1e-30},
      {"chlo.erf_inv", erfinv_ref, -0.999, 0.999, 1e-5, 1e-7},
      {"chlo.square", [](double x) { return x * x; }, -10, 10, 1e-7, 0},
      {"chlo.tan", [](double x) { return std::tan(x); }, -1.5, 1.5, 1e-5, 1e-7},
      {"chlo.sinh", [](double x) { return std::sinh(x); }, -5, 5, 1e-6, 1e-7},
      {"chlo.cosh", [](double x) { return std::cosh(x); }, -5, 5, 1e-6, 0},
      {"chlo.asinh", [](double x) { return std::asinh(x); }, -100, 100, 1e-6, 1e-7},
      {"chlo.acosh", [](double x) { return std::acosh(x); }, 1, 100, 1e-6, 1e-6},
      {"chlo.atanh", [](double x) { return std::atanh(x); }, -0.99, 0.99, 1e-5, 1e-7},
      {"chlo.asin", [](double x) { return std::asin(x); }, -1, 1, 1e-6, 1e-6},
      {"chlo.acos", [](double x) { return std::acos(x); }, -1, 1, 1e-6, 1e-6},
      {"chlo.atan", [](double x) { return std::atan(x); }, -50, 50, 1e-6, 1e-7},
      {"chlo.lgamma", [](double x) { return std::lgamma(x); }, 0.01, 30, 1e-5, 1e-6},
      // Negative arguments between the poles (the grid misses the integers).
      {"chlo.lgamma", [](double x) { return std::lgamma(x); }, -4.95, -0.05, 1e-5, 1e-5},
      {"chlo.digamma", digamma_ref, 0.01, 30, 1e-5, 1e-6},
      {"chlo.digamma", digamma_ref, -2.95, -0.05, 1e-4, 1e-5},
  };
  const int n = 2001;
  for (const Case& c : cases) {
    std::vector<double> xs(n);
    for (int i = 0; i < n; ++i) xs[i] = static_cast<float>(c.lo + (c.hi - c.lo) * i / (n - 1));
    auto out =
        run_text(unary(c.op, n), {HostTensor::from_doubles(TensorType(DType::kF32, {n}), xs)});
    for (int i = 0; i < n; ++i) {
      const double want = c.ref(xs[i]);
      ASSERT_NEAR(out[0].get(i), want, c.atol + c.rtol * std::fabs(want))
          << c.op << "(" << xs[i] << ")";
    }
  }
  // erf_inv(+-1) is +-inf; erfc underflows to 0 and reaches 2.
  auto e = run_text(unary("chlo.erf_inv", 2),
                    {HostTensor::from_doubles(TensorType(DType::kF32, {2}), {1, -1})});
  EXPECT_EQ(e[0].get(0), INFINITY);
  EXPECT_EQ(e[0].get(1), -INFINITY);
  auto c = run_text(unary("chlo.erfc", 2),
                    {HostTensor::from_doubles(TensorType(DType::kF32, {2}), {12, -12})});
  EXPECT_EQ(c[0].get(0), 0.0);
  EXPECT_EQ(c[0].get(1), 2.0);
}

TEST(ChloExecTest, SpecialValuesOfTheNewerOps) {
  const TensorType t(DType::kF32, {4});
  auto in = [&](std::vector<double> v) { return HostTensor::from_doubles(t, v); };
  auto lg = run_text(unary("chlo.lgamma", 4), {in({1, 2, 0, -3})});
  EXPECT_NEAR(lg[0].get(0), 0.0, 1e-6);  // lgamma(1) = lgamma(2) = 0
  EXPECT_NEAR(lg[0].get(1), 0.0, 1e-6);
  EXPECT_EQ(lg[0].get(2), INFINITY);  // poles
  EXPECT_EQ(lg[0].get(3), INFINITY);
  auto dg = run_text(unary("chlo.digamma", 4), {in({1, 0, -2, 0.5})});
  EXPECT_NEAR(dg[0].get(0), -0.5772156649, 1e-6);  // -Euler's constant
  EXPECT_TRUE(std::isnan(dg[0].get(1)));
  EXPECT_TRUE(std::isnan(dg[0].get(2)));
  EXPECT_NEAR(dg[0].get(3), -1.9635100260, 1e-5);  // -gamma - 2 log 2
  auto ac = run_text(unary("chlo.acos", 4), {in({-1, 1, 0, 2})});
  EXPECT_NEAR(ac[0].get(0), M_PI, 1e-6);
  EXPECT_EQ(ac[0].get(1), 0.0);
  EXPECT_TRUE(std::isnan(ac[0].get(3)));
}

TEST(ChloExecTest, NextAfterMovesOneUlpTowardsY) {
  const std::string text =
      "func.func @main(%x: tensor<6xf32>, %y: tensor<6xf32>) -> tensor<6xf32> {\n"
      "  %0 = chlo.next_after %x, %y : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>\n"
      "  return %0 : tensor<6xf32>\n}\n";
  const TensorType t(DType::kF32, {6});
  const std::vector<double> x = {1, 1, -1, 0, -0.0, 5}, y = {2, 0, 0, -1, 1, 5};
  auto out = run_text(text, {HostTensor::from_doubles(t, x), HostTensor::from_doubles(t, y)});
  for (int i = 0; i < 6; ++i) {
    const float want = std::nextafter(static_cast<float>(x[i]), static_cast<float>(y[i]));
    EXPECT_EQ(static_cast<float>(out[0].get(i)), want) << x[i] << " -> " << y[i];
  }
}

TEST(ChloExecTest, ReduceWindowPoolsAndScansAsALoopWould) {
  // max over 2x2 windows with stride 2, and a cumulative sum (window 4, padding 3 before).
  const std::string text =
      "func.func @main(%x: tensor<4x4xf32>, %v: tensor<4xf32>) -> (tensor<2x2xf32>, "
      "tensor<4xf32>) {\n"
      "  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
      "  %zero = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %0 = \"stablehlo.reduce_window\"(%x, %ninf) <{window_dimensions = array<i64: 2, 2>, "
      "window_strides = array<i64: 2, 2>}> ({\n"
      "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
      "    %m = stablehlo.maximum %a, %b : tensor<f32>\n"
      "    stablehlo.return %m : tensor<f32>\n"
      "  }) : (tensor<4x4xf32>, tensor<f32>) -> tensor<2x2xf32>\n"
      "  %1 = \"stablehlo.reduce_window\"(%v, %zero) <{padding = dense<[[3, 0]]> : "
      "tensor<1x2xi64>, window_dimensions = array<i64: 4>}> ({\n"
      "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
      "    %s = stablehlo.add %a, %b : tensor<f32>\n"
      "    stablehlo.return %s : tensor<f32>\n"
      "  }) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>\n"
      "  return %0, %1 : tensor<2x2xf32>, tensor<4xf32>\n}\n";
  std::vector<double> x(16);
  for (int i = 0; i < 16; ++i) x[i] = (i * 7) % 16;
  auto out = run_text(text, {HostTensor::from_doubles(TensorType(DType::kF32, {4, 4}), x),
                             HostTensor::from_doubles(TensorType(DType::kF32, {4}), {1, 2, 3, 4})});
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) {
      double m = -INFINITY;
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) m = std::max(m, x[(2 * r + i) * 4 + 2 * c + j]);
      EXPECT_EQ(out[0].get(r * 2 + c), m) << r << "," << c;
    }
  const double sums[] = {1, 3, 6, 10};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[1].get(i), sums[i]) << i;
}

TEST(ChloExecTest, TopKTakesTheLargestWithTiesInIndexOrder) {
  const std::string text =
      "func.func @main(%a: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {\n"
      "  %v, %i = chlo.top_k(%a, k = 3) : tensor<2x5xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)\n"
      "  return %v, %i : tensor<2x3xf32>, tensor<2x3xi32>\n}\n";
  auto out = run_text(text, {HostTensor::from_doubles(TensorType(DType::kF32, {2, 5}),
                                                      {1, 7, 3, 7, -2, 0, -1, -3, 4, 0})});
  const std::vector<double> values{7, 7, 3, 4, 0, 0}, indices{1, 3, 2, 3, 0, 4};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(out[0].get(i), values[i]) << i;
    EXPECT_EQ(out[1].get(i), indices[i]) << i;
  }
}

// jnp.argmax / jnp.argmin as jax.jit(...).lower(...).as_text() prints them: a reduce of
// (values, iota) whose region prefers NaN, then the larger value, then the lower index.
std::string arg_reduce(const char* dir, const char* init, int dim) {
  return std::string("func.func @main(%arg0: tensor<3x4xf32>) -> tensor<") +
         (dim == 1 ? "3" : "4") +
         "xi32> {\n"
         "  %0 = stablehlo.iota dim = " +
         std::to_string(dim) +
         " : tensor<3x4xi32>\n"
         "  %cst = stablehlo.constant dense<" +
         init +
         "> : tensor<f32>\n"
         "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
         "  %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [" +
         std::to_string(dim) +
         "] : (tensor<3x4xf32>, tensor<3x4xi32>, tensor<f32>, tensor<i32>) -> "
         "(tensor<" +
         (dim == 1 ? "3" : "4") + "xf32>, tensor<" + (dim == 1 ? "3" : "4") +
         "xi32>)\n"
         "   reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: "
         "tensor<i32>)  {\n"
         "    %2 = stablehlo.compare " +
         dir +
         ", %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
         "    %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> "
         "tensor<i1>\n"
         "    %4 = stablehlo.or %2, %3 : tensor<i1>\n"
         "    %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> "
         "tensor<i1>\n"
         "    %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> "
         "tensor<i1>\n"
         "    %7 = stablehlo.and %5, %6 : tensor<i1>\n"
         "    %8 = stablehlo.or %4, %7 : tensor<i1>\n"
         "    %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>\n"
         "    %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>\n"
         "    stablehlo.return %9, %10 : tensor<f32>, tensor<i32>\n"
         "  }\n"
         "  return %1#1 : tensor<" +
         (dim == 1 ? "3" : "4") + "xi32>\n}\n";
}

TEST(ChloExecTest, TwoOperandReduceComputesArgmaxAndArgmin) {
  // Row 0 has a tie (first index wins), row 1 a NaN (NaN wins), row 2 is all equal.
  const std::vector<double> x{1, 5, 2, 5, -1, NAN, 9, 0, 3, 3, 3, 3};
  const auto in = HostTensor::from_doubles(TensorType(DType::kF32, {3, 4}), x);
  auto amax = run_text(arg_reduce("GT", "0xFF800000", 1), {in});
  EXPECT_EQ(amax[0].get(0), 1);
  EXPECT_EQ(amax[0].get(1), 1);
  EXPECT_EQ(amax[0].get(2), 0);
  auto amin = run_text(arg_reduce("LT", "0x7F800000", 0), {in});  // over rows
  const std::vector<double> want{1, 1, 0, 1};                     // column 1 holds the NaN
  for (int j = 0; j < 4; ++j) EXPECT_EQ(amin[0].get(j), want[j]) << j;
}

}  // namespace
}  // namespace vtrn::runtime::test
