// The addmm call's backend_config and operand checks (compiler/aten_addmm.h), and its price: the
// matmul it is.
#include "vtrn/compiler/aten_addmm.h"

#include <gtest/gtest.h>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"

namespace vtrn::compiler {
namespace {

using hlo::DType;
using hlo::TensorType;

TEST(AtenAddmmConfigTest, RoundTripsAndRejectsOtherText) {
  for (const AtenAddmmConfig c : {AtenAddmmConfig{1, false, true}, AtenAddmmConfig{0, true, false},
                                  AtenAddmmConfig{0.1, true, true}}) {
    const std::optional<AtenAddmmConfig> back = parse_aten_addmm_config(aten_addmm_config(c));
    ASSERT_TRUE(back.has_value()) << aten_addmm_config(c);
    EXPECT_EQ(back->beta, c.beta);
    EXPECT_EQ(back->lhs_transposed, c.lhs_transposed);
    EXPECT_EQ(back->rhs_transposed, c.rhs_transposed);
  }
  EXPECT_EQ(aten_addmm_config({0.5, false, true}), "beta=0.5;lhs_transposed=0;rhs_transposed=1");
  for (const char* bad :
       {"", "beta=;lhs_transposed=0;rhs_transposed=0", "beta=1;lhs_transposed=2;rhs_transposed=0",
        "beta=1;lhs_transposed=0", "beta=x;lhs_transposed=0;rhs_transposed=0",
        "beta=1;lhs_transposed=0;rhs_transposed=0;", "causal=1;scale=1"})
    EXPECT_FALSE(parse_aten_addmm_config(bad).has_value()) << bad;
}

// x [m, k] @ w^T (w stored [n, k]) onto a bias broadcast to [m, n].
hlo::Module linear(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& config,
                   TensorType out) {
  hlo::Builder b;
  hlo::Value x = b.param(TensorType(DType::kF32, {m, k}));
  hlo::Value w = b.param(TensorType(DType::kF32, {n, k}));
  hlo::Value bias = b.param(TensorType(DType::kF32, {n}));
  hlo::Value alpha = b.param(TensorType(DType::kF32, {}));
  hlo::Value c = b.broadcast_in_dim(bias, {m, n}, {1});
  return b.finish(b.custom_call(std::string(kAtenAddmmTarget), {c, x, w, alpha}, {out}, config));
}

TEST(AtenAddmmShapeTest, ReadsTheProductShapeFromStoredLayouts) {
  const hlo::Module mod =
      linear(6, 4, 5, aten_addmm_config({1, false, true}), TensorType(DType::kF32, {6, 4}));
  const hlo::Op& call = mod.main.ops.back();
  ASSERT_TRUE(is_aten_addmm(call));
  const AtenAddmmShape s = aten_addmm_shape(mod.main, call);
  EXPECT_EQ(s.m, 6);
  EXPECT_EQ(s.n, 4);
  EXPECT_EQ(s.k, 5);
  EXPECT_TRUE(s.config.rhs_transposed);
}

TEST(AtenAddmmShapeTest, SaysWhatDoesNotFit) {
  auto message = [](const hlo::Module& mod) -> std::string {
    try {
      aten_addmm_shape(mod.main, mod.main.ops.back());
    } catch (const hlo::Error& e) {
      return e.what();
    }
    return "";
  };
  // The weight read as stored [k, n]: 5 != 4.
  EXPECT_EQ(message(linear(6, 4, 5, aten_addmm_config({1, false, false}),
                           TensorType(DType::kF32, {6, 4}))),
            "custom_call @vtrn.aten_addmm needs float32 c [m, n], lhs [m, k] (as is), rhs [k, n] "
            "(as is), alpha [] and a result [m, n]; got (tensor<6x4xf32>, tensor<6x5xf32>, "
            "tensor<4x5xf32>, tensor<f32>) -> tensor<6x4xf32>");
  // beta 0 takes no c.
  EXPECT_EQ(message(linear(6, 4, 5, aten_addmm_config({0, false, true}),
                           TensorType(DType::kF32, {6, 4}))),
            "custom_call @vtrn.aten_addmm with beta 0 takes 3 operands and gives 1 result, got 4 "
            "and 1");
  EXPECT_EQ(message(linear(6, 4, 5, "beta=1", TensorType(DType::kF32, {6, 4}))),
            "custom_call @vtrn.aten_addmm has a malformed backend_config \"beta=1\"; expected "
            "\"beta=<value>;lhs_transposed=0|1;rhs_transposed=0|1\"");
}

// Priced as the Tensor-engine matmul of the same m, n, k: the same time as a dot_general's.
TEST(AtenAddmmShapeTest, CostsWhatTheMatmulCosts) {
  const std::int64_t m = 256, n = 512, k = 1024;
  const Executable call = compile(
      linear(m, n, k, aten_addmm_config({1, false, true}), TensorType(DType::kF32, {m, n})));
  hlo::Builder b;
  hlo::Value x = b.param(TensorType(DType::kF32, {m, k}));
  hlo::Value w = b.param(TensorType(DType::kF32, {k, n}));
  const Executable dot = compile(b.finish({b.dot_general(x, w, hlo::DotDims{{}, {}, {1}, {0}})}));
  auto tensor_time = [](const Executable& e) {
    double t = 0;
    for (const Kernel& kernel : e.kernels)
      if (kernel.cost.engine == cost::Engine::kTensor) t += kernel.cost.time_s;
    return t;
  };
  EXPECT_GT(tensor_time(dot), 0);
  EXPECT_DOUBLE_EQ(tensor_time(call), tensor_time(dot));
}

}  // namespace
}  // namespace vtrn::compiler
