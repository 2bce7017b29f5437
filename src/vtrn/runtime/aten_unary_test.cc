// ATen's unary functions as the executor uses them: an op marked vml computes with the
// installed function, in a fused loop and alone, for float32 only; unmarked ops, and marked ones
// with nothing installed, compute as before. The installed functions here are stand-ins that
// leave a mark (a value no real exp gives), so the test sees which path ran.
#include "vtrn/runtime/aten_unary.h"

#include <gtest/gtest.h>

#include <cmath>

#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

int g_calls = 0;

// 1000 + x: a mark no exp, log, sqrt, sin, cos or tanh of these inputs gives.
void marked(std::int64_t n, const float* x, float* y) {
  ++g_calls;
  for (std::int64_t i = 0; i < n; ++i) y[i] = 1000.0f + x[i];
}

class AtenUnaryTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int f = 0; f < aten_unary::kFnCount; ++f)
      aten_unary::install(static_cast<aten_unary::Fn>(f), nullptr);
  }
};

TEST_F(AtenUnaryTest, ApplyIsFalseUntilInstalled) {
  float x[3] = {1, 2, 3}, y[3] = {0, 0, 0};
  EXPECT_FALSE(aten_unary::installed(aten_unary::Fn::kExp));
  EXPECT_FALSE(aten_unary::apply(aten_unary::Fn::kExp, x, y, 3));
  EXPECT_EQ(y[0], 0.0f);
  aten_unary::install(aten_unary::Fn::kExp, marked);
  EXPECT_TRUE(aten_unary::installed(aten_unary::Fn::kExp));
  EXPECT_FALSE(aten_unary::installed(aten_unary::Fn::kLog));
  EXPECT_TRUE(aten_unary::apply(aten_unary::Fn::kExp, x, y, 3));
  EXPECT_EQ(y[2], 1003.0f);
}

TEST_F(AtenUnaryTest, MarkedFloat32OpsUseTheInstalledFunction) {
  const std::pair<OpKind, aten_unary::Fn> kinds[] = {
      {OpKind::kExp, aten_unary::Fn::kExp},    {OpKind::kLog, aten_unary::Fn::kLog},
      {OpKind::kSqrt, aten_unary::Fn::kSqrt},  {OpKind::kSine, aten_unary::Fn::kSin},
      {OpKind::kCosine, aten_unary::Fn::kCos}, {OpKind::kTanh, aten_unary::Fn::kTanh}};
  const std::int64_t n = 5000;  // several chunks
  const auto xs = random_values(n, 0.5, 2, 7, DType::kF32);
  for (const auto& [kind, fn] : kinds) {
    for (bool fusion : {true, false}) {
      aten_unary::install(fn, marked);
      Builder b;
      TensorType t(DType::kF32, {n});
      Value x = b.param(t);
      // The marked op, the same op unmarked, and the marked op inside a longer loop.
      Value marked_op = b.vml_unary(kind, x);
      hlo::Module m = b.finish({marked_op, b.unary(kind, x), b.add(b.vml_unary(kind, x), x)});
      auto out = run(m, {HostTensor::from_doubles(t, xs)}, fusion);
      for (std::int64_t i = 0; i < n; i += 97) {
        const double xi = xs[static_cast<std::size_t>(i)];
        ASSERT_EQ(out[0].get(i), static_cast<float>(1000.0f + static_cast<float>(xi)))
            << hlo::op_name(kind) << " element " << i;
        ASSERT_LT(std::fabs(out[1].get(i)), 100) << hlo::op_name(kind) << " unmarked";
        ASSERT_EQ(out[2].get(i),
                  static_cast<float>(static_cast<float>(1000.0f + static_cast<float>(xi)) +
                                     static_cast<float>(xi)))
            << hlo::op_name(kind) << " inside a loop";
      }
      aten_unary::install(fn, nullptr);
      // Nothing installed: the marked op computes as the unmarked one.
      auto plain = run(m, {HostTensor::from_doubles(t, xs)}, fusion);
      for (std::int64_t i = 0; i < n; i += 97) ASSERT_EQ(plain[0].get(i), plain[1].get(i));
    }
  }
}

// A bfloat16 op computes in float32 slots but is not ATen's float32 kernel: the mark must not
// reach it, nor a float64 one.
TEST_F(AtenUnaryTest, OtherDtypesIgnoreTheInstalledFunction) {
  aten_unary::install(aten_unary::Fn::kExp, marked);
  for (DType d : {DType::kBF16, DType::kF64}) {
    Builder b;
    TensorType t(d, {64});
    Value x = b.param(t);
    hlo::Module m = b.finish({b.vml_unary(OpKind::kExp, x)});
    auto out = run(m, {HostTensor::from_doubles(t, random_values(64, -1, 1, 3, d))});
    for (std::int64_t i = 0; i < 64; ++i) ASSERT_LT(out[0].get(i), 3.0) << hlo::dtype_name(d);
  }
}

}  // namespace
}  // namespace vtrn::runtime
