// The nll_loss call's backend_config and operand checks (compiler/aten_nll_loss.h), and its
// price: a pass over the N values it picks.
#include "vtrn/compiler/aten_nll_loss.h"

#include <gtest/gtest.h>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"

namespace vtrn::compiler {
namespace {

using hlo::DType;
using hlo::TensorType;

TEST(AtenNllLossConfigTest, RoundTripsAndRejectsOtherText) {
  for (const AtenNllLossConfig c : {AtenNllLossConfig{-100, true}, AtenNllLossConfig{3, false},
                                    AtenNllLossConfig{INT64_MIN, true}}) {
    const std::optional<AtenNllLossConfig> back =
        parse_aten_nll_loss_config(aten_nll_loss_config(c));
    ASSERT_TRUE(back.has_value()) << aten_nll_loss_config(c);
    EXPECT_EQ(back->ignore_index, c.ignore_index);
    EXPECT_EQ(back->mean, c.mean);
  }
  EXPECT_EQ(aten_nll_loss_config({-100, true}), "ignore_index=-100;mean=1");
  for (const char* bad :
       {"", "ignore_index=;mean=1", "ignore_index=1.5;mean=1", "ignore_index=-100",
        "ignore_index=-100;mean=2", "ignore_index=-100;mean=1;", "ord=2;vectorized=1"})
    EXPECT_FALSE(parse_aten_nll_loss_config(bad).has_value()) << bad;
}

hlo::Module nll_call(TensorType x, TensorType target, std::optional<TensorType> weight, DType out,
                     const std::string& config) {
  hlo::Builder b;
  std::vector<hlo::Value> in{b.param(x), b.param(target)};
  if (weight) in.push_back(b.param(*weight));
  return b.finish(b.custom_call(std::string(kAtenNllLossTarget), in,
                                {TensorType(out, {}), TensorType(out, {})}, config));
}

TEST(AtenNllLossShapeTest, ReadsTheShapeAndRejectsOtherOperands) {
  const std::string config = aten_nll_loss_config({-100, true});
  const TensorType x(DType::kBF16, {6, 33}), t(DType::kI64, {6});
  const hlo::Module mod = nll_call(x, t, TensorType(DType::kBF16, {33}), DType::kBF16, config);
  const AtenNllLossShape s = aten_nll_loss_shape(mod.main, mod.main.ops.back());
  EXPECT_EQ(s.samples, 6);
  EXPECT_EQ(s.classes, 33);
  EXPECT_EQ(s.dtype, DType::kBF16);
  EXPECT_TRUE(s.weighted);
  EXPECT_TRUE(s.config.mean);
  auto rejects = [&](const hlo::Module& m) {
    EXPECT_THROW(aten_nll_loss_shape(m.main, m.main.ops.back()), hlo::Error);
  };
  rejects(nll_call(x, TensorType(DType::kI32, {6}), std::nullopt, DType::kBF16, config));
  rejects(nll_call(x, TensorType(DType::kI64, {5}), std::nullopt, DType::kBF16, config));
  rejects(nll_call(x, t, TensorType(DType::kF32, {33}), DType::kBF16, config));
  rejects(nll_call(x, t, std::nullopt, DType::kF32, config));
  rejects(nll_call(TensorType(DType::kF16, {6, 33}), t, std::nullopt, DType::kF16, config));
  rejects(nll_call(TensorType(DType::kF64, {6, 33}), t, std::nullopt, DType::kF64, config));
  rejects(nll_call(x, t, std::nullopt, DType::kBF16, "mean=1"));
}

TEST(AtenNllLossShapeTest, IsPricedAsAPassOverThePickedValues) {
  const std::string config = aten_nll_loss_config({-100, false});
  const auto small =
      compile(nll_call(TensorType(DType::kF32, {64, 1000}), TensorType(DType::kI64, {64}),
                       std::nullopt, DType::kF32, config));
  const auto large =
      compile(nll_call(TensorType(DType::kF32, {4096, 1000}), TensorType(DType::kI64, {4096}),
                       std::nullopt, DType::kF32, config));
  ASSERT_EQ(small.kernels.size(), 1u);
  EXPECT_GT(small.kernels[0].cost.time_s, 0);
  EXPECT_GT(large.kernels[0].cost.time_s, small.kernels[0].cost.time_s);
}

}  // namespace
}  // namespace vtrn::compiler
