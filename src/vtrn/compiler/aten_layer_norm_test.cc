// The layer norm call's backend_config and operand checks (compiler/aten_layer_norm.h).
#include "vtrn/compiler/aten_layer_norm.h"

#include <gtest/gtest.h>

#include "vtrn/hlo/builder.h"

namespace vtrn::compiler {
namespace {

using hlo::DType;
using hlo::TensorType;

TEST(AtenLayerNormConfigTest, RoundTripsAndRejectsOtherText) {
  for (const AtenLayerNormConfig c :
       {AtenLayerNormConfig{1e-5f, true, true}, AtenLayerNormConfig{1e-12f, false, true},
        AtenLayerNormConfig{0.1f, true, false}}) {
    const std::optional<AtenLayerNormConfig> back =
        parse_aten_layer_norm_config(aten_layer_norm_config(c));
    ASSERT_TRUE(back.has_value()) << aten_layer_norm_config(c);
    EXPECT_EQ(back->eps, c.eps);  // the float survives the text exactly
    EXPECT_EQ(back->gamma, c.gamma);
    EXPECT_EQ(back->beta, c.beta);
  }
  EXPECT_EQ(aten_layer_norm_config({0.5f, false, true}), "eps=0.5;gamma=0;beta=1");
  for (const char* bad : {"", "eps=;gamma=0;beta=0", "eps=1e-5;gamma=2;beta=0", "eps=1e-5;gamma=0",
                          "eps=x;gamma=0;beta=0", "eps=1e-5;gamma=0;beta=0;", "ord=2;vectorized=1"})
    EXPECT_FALSE(parse_aten_layer_norm_config(bad).has_value()) << bad;
}

hlo::Module call(std::vector<TensorType> in, std::vector<TensorType> out,
                 const std::string& config) {
  hlo::Builder b;
  std::vector<hlo::Value> operands;
  for (const TensorType& t : in) operands.push_back(b.param(t));
  return b.finish(b.custom_call(std::string(kAtenLayerNormTarget), operands, out, config));
}

TEST(AtenLayerNormShapeTest, ReadsRowsAndSaysWhatDoesNotFit) {
  const TensorType x(DType::kF32, {6, 10}), p(DType::kF32, {10}), s(DType::kF32, {6});
  const hlo::Module ok = call({x, p}, {x, s, s}, aten_layer_norm_config({1e-5f, false, true}));
  ASSERT_TRUE(is_aten_layer_norm(ok.main.ops.back()));
  const AtenLayerNormShape shape = aten_layer_norm_shape(ok.main, ok.main.ops.back());
  EXPECT_EQ(shape.rows, 6);
  EXPECT_EQ(shape.n, 10);
  EXPECT_TRUE(shape.config.beta);
  auto message = [](const hlo::Module& mod) -> std::string {
    try {
      aten_layer_norm_shape(mod.main, mod.main.ops.back());
    } catch (const hlo::Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(call({x}, {x, s, s}, aten_layer_norm_config({1e-5f, true, true}))),
            "custom_call @vtrn.aten_layer_norm with gamma=1 and beta=1 takes 3 operands and gives "
            "3 results, got 1 and 3");
  EXPECT_EQ(message(call({x, TensorType(DType::kF32, {9})}, {x, s, s},
                         aten_layer_norm_config({1e-5f, true, false}))),
            "custom_call @vtrn.aten_layer_norm needs float32 x [rows, n], gamma and beta [n], and "
            "results y [rows, n], mean and rstd [rows]; got (tensor<6x10xf32>, tensor<9xf32>) -> "
            "(tensor<6x10xf32>, tensor<6xf32>, tensor<6xf32>)");
  EXPECT_EQ(message(call({x}, {x, s, s}, "eps=1e-5")),
            "custom_call @vtrn.aten_layer_norm has a malformed backend_config \"eps=1e-5\"; "
            "expected \"eps=<float>;gamma=0|1;beta=0|1\"");
}

}  // namespace
}  // namespace vtrn::compiler
