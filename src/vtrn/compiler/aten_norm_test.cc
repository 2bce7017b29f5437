// The norm call's backend_config and operand checks (compiler/aten_norm.h), and its price: the
// multiply and add per element of the sum of squares it stands for.
#include "vtrn/compiler/aten_norm.h"

#include <gtest/gtest.h>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"

namespace vtrn::compiler {
namespace {

using hlo::DType;
using hlo::TensorType;

TEST(AtenNormConfigTest, RoundTripsAndRejectsOtherText) {
  for (const AtenNormConfig c :
       {AtenNormConfig{1, false}, AtenNormConfig{2, false}, AtenNormConfig{2, true}}) {
    const std::optional<AtenNormConfig> back = parse_aten_norm_config(aten_norm_config(c));
    ASSERT_TRUE(back.has_value()) << aten_norm_config(c);
    EXPECT_EQ(back->ord, c.ord);
    EXPECT_EQ(back->vectorized, c.vectorized);
  }
  EXPECT_EQ(aten_norm_config({2, true}), "ord=2;vectorized=1");
  // Order 1 has no fast path in ATen; order 3 is not this call's.
  for (const char* bad : {"", "ord=1;vectorized=1", "ord=3;vectorized=0", "ord=2",
                          "ord=2;vectorized=1;", "beta=1;lhs_transposed=0;rhs_transposed=0"})
    EXPECT_FALSE(parse_aten_norm_config(bad).has_value()) << bad;
}

hlo::Module norm_call(TensorType in, TensorType out, const std::string& config) {
  hlo::Builder b;
  hlo::Value x = b.param(in);
  return b.finish(b.custom_call(std::string(kAtenNormTarget), {x}, {out}, config));
}

TEST(AtenNormShapeTest, ReadsRowsAndLength) {
  const hlo::Module mod = norm_call(TensorType(DType::kBF16, {6, 33}),
                                    TensorType(DType::kBF16, {6}), aten_norm_config({2, true}));
  const hlo::Op& call = mod.main.ops.back();
  ASSERT_TRUE(is_aten_norm(call));
  const AtenNormShape s = aten_norm_shape(mod.main, call);
  EXPECT_EQ(s.rows, 6);
  EXPECT_EQ(s.n, 33);
  EXPECT_EQ(s.dtype, DType::kBF16);
  EXPECT_TRUE(s.config.vectorized);
}

TEST(AtenNormShapeTest, SaysWhatDoesNotFit) {
  auto message = [](const hlo::Module& mod) -> std::string {
    try {
      aten_norm_shape(mod.main, mod.main.ops.back());
    } catch (const hlo::Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(norm_call(TensorType(DType::kF32, {6, 33}), TensorType(DType::kBF16, {6}),
                              aten_norm_config({2, true}))),
            "custom_call @vtrn.aten_norm takes x [rows, n] of float32 or bfloat16 to [rows] of the "
            "same type, got tensor<6x33xf32> -> tensor<6xbf16>");
  EXPECT_EQ(message(norm_call(TensorType(DType::kF32, {6, 33}), TensorType(DType::kF32, {5}),
                              aten_norm_config({1, false}))),
            "custom_call @vtrn.aten_norm takes x [rows, n] of float32 or bfloat16 to [rows] of the "
            "same type, got tensor<6x33xf32> -> tensor<5xf32>");
  EXPECT_EQ(message(norm_call(TensorType(DType::kF32, {6, 33}), TensorType(DType::kF32, {6}),
                              "ord=3;vectorized=0")),
            "custom_call @vtrn.aten_norm has a malformed backend_config \"ord=3;vectorized=0\"; "
            "expected \"ord=1;vectorized=0\", \"ord=2;vectorized=0\" or \"ord=2;vectorized=1\"");
}

// Priced as the fused multiply and sum over the same elements.
TEST(AtenNormShapeTest, CostsWhatTheSumOfSquaresCosts) {
  const std::int64_t rows = 512, n = 4096;
  const TensorType in(DType::kF32, {rows, n});
  const Executable call =
      compile(norm_call(in, TensorType(DType::kF32, {rows}), aten_norm_config({2, true})));
  hlo::Builder b;
  hlo::Value x = b.param(in);
  hlo::Value zero = b.constant(hlo::Literal::scalar(DType::kF32, 0.0));
  const Executable sum =
      compile(b.finish({b.reduce(b.mul(x, x), zero, {1}, hlo::ReduceKind::kAdd)}));
  auto total = [](const Executable& e) {
    double t = 0;
    for (const Kernel& kernel : e.kernels) t += kernel.cost.time_s;
    return t;
  };
  EXPECT_GT(total(sum), 0);
  // The sum also reads its init value: 4 bytes.
  EXPECT_NEAR(total(call), total(sum), 1e-6 * total(sum));
}

}  // namespace
}  // namespace vtrn::compiler
