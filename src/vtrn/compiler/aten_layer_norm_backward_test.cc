// The layer norm backward call's backend_config and operand checks
// (compiler/aten_layer_norm_backward.h), and its price: Vector-engine work over x.
#include "vtrn/compiler/aten_layer_norm_backward.h"

#include <gtest/gtest.h>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"

namespace vtrn::compiler {
namespace {

using hlo::DType;
using hlo::TensorType;

TEST(AtenLayerNormBackwardConfigTest, RoundTripsAndRejectsOtherText) {
  for (bool gamma : {false, true})
    for (bool beta : {false, true}) {
      const auto back =
          parse_aten_layer_norm_backward_config(aten_layer_norm_backward_config({gamma, beta}));
      ASSERT_TRUE(back.has_value());
      EXPECT_EQ(back->gamma, gamma);
      EXPECT_EQ(back->beta, beta);
    }
  EXPECT_EQ(aten_layer_norm_backward_config({true, false}), "gamma=1;beta=0");
  for (const char* bad :
       {"", "gamma=1", "gamma=2;beta=0", "gamma=1;beta=0;", "eps=1e-05;gamma=1;beta=1"})
    EXPECT_FALSE(parse_aten_layer_norm_backward_config(bad).has_value()) << bad;
}

hlo::Module backward_call(std::int64_t rows, std::int64_t n, bool gamma, TensorType stat) {
  hlo::Builder b;
  const TensorType x(DType::kF32, {rows, n}), column(DType::kF32, {n});
  std::vector<hlo::Value> in{b.param(x), b.param(x), b.param(stat), b.param(stat)};
  if (gamma) in.push_back(b.param(column));
  return b.finish(b.custom_call(std::string(kAtenLayerNormBackwardTarget), in, {x, column, column},
                                aten_layer_norm_backward_config({gamma, true})));
}

TEST(AtenLayerNormBackwardShapeTest, ReadsTheShapeRejectsOthersAndIsPriced) {
  const hlo::Module m = backward_call(6, 33, true, TensorType(DType::kF32, {6}));
  const AtenLayerNormBackwardShape s = aten_layer_norm_backward_shape(m.main, m.main.ops.back());
  EXPECT_EQ(s.rows, 6);
  EXPECT_EQ(s.n, 33);
  EXPECT_TRUE(s.config.gamma);
  const hlo::Module bad = backward_call(6, 33, true, TensorType(DType::kF32, {6, 1}));
  EXPECT_THROW(aten_layer_norm_backward_shape(bad.main, bad.main.ops.back()), hlo::Error);
  const Executable small = compile(backward_call(64, 256, false, TensorType(DType::kF32, {64})));
  const Executable large = compile(backward_call(512, 256, false, TensorType(DType::kF32, {512})));
  ASSERT_EQ(small.kernels.size(), 1u);
  EXPECT_GT(small.kernels[0].cost.time_s, 0);
  EXPECT_GT(large.kernels[0].cost.time_s, small.kernels[0].cost.time_s);
}

}  // namespace
}  // namespace vtrn::compiler
