// The batch norm calls' backend_config and operand checks (compiler/aten_batch_norm.h), and
// their price: Vector-engine work over x.
#include "vtrn/compiler/aten_batch_norm.h"

#include <gtest/gtest.h>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"

namespace vtrn::compiler {
namespace {

using hlo::DType;
using hlo::TensorType;

TEST(AtenBatchNormConfigTest, RoundTripsAndRejectsOtherText) {
  for (bool backward : {false, true})
    for (bool training : {false, true})
      for (bool flags : {false, true}) {
        const AtenBatchNormConfig c{training, 0.25, 1e-3, flags, !flags, flags};
        const auto back =
            parse_aten_batch_norm_config(aten_batch_norm_config(c, backward), backward);
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(back->training, training);
        EXPECT_EQ(back->eps, 1e-3);
        EXPECT_EQ(back->weight, flags);
        if (!backward) {
          EXPECT_EQ(back->momentum, 0.25);
          EXPECT_EQ(back->bias, !flags);
          EXPECT_EQ(back->running, flags);
        }
      }
  EXPECT_EQ(aten_batch_norm_config({true, 0.1, 1e-5, true, false, true}, true),
            "training=1;eps=1.0000000000000001e-05;weight=1");
  const std::string forward = aten_batch_norm_config({}, false);
  for (const std::string& bad : {std::string(), forward + ";", std::string("training=1;eps=1"),
                                 aten_batch_norm_config({}, true)})
    EXPECT_FALSE(parse_aten_batch_norm_config(bad, false).has_value()) << bad;
  EXPECT_FALSE(parse_aten_batch_norm_config(forward, true).has_value());
}

hlo::Module forward_call(const TensorType& x, std::int64_t channels, bool running,
                         bool training = true) {
  hlo::Builder b;
  const TensorType vector(DType::kF32, {channels});
  std::vector<hlo::Value> in{b.param(x), b.param(vector)};  // x, weight
  std::vector<TensorType> results{x, vector, vector};
  if (running) {
    in.push_back(b.param(vector));
    in.push_back(b.param(vector));
    results.insert(results.end(), {vector, vector});
  }
  return b.finish(b.custom_call(std::string(kAtenBatchNormTarget), in, results,
                                aten_batch_norm_config({training, 0.1, 1e-5, true, false, running},
                                                       /*backward=*/false)));
}

TEST(AtenBatchNormShapeTest, ReadsTheShapeRejectsOthersAndIsPriced) {
  const hlo::Module m = forward_call(TensorType(DType::kF32, {2, 3, 4, 5}), 3, true);
  const AtenBatchNormShape s = aten_batch_norm_shape(m.main, m.main.ops.back());
  EXPECT_FALSE(s.backward);
  EXPECT_EQ(s.batch, 2);
  EXPECT_EQ(s.channels, 3);
  EXPECT_EQ(s.per_channel, 20);
  // A weight of another length, evaluation without running statistics, a float16 input.
  const hlo::Module wrong = forward_call(TensorType(DType::kF32, {2, 3, 4, 5}), 4, true);
  EXPECT_THROW(aten_batch_norm_shape(wrong.main, wrong.main.ops.back()), hlo::Error);
  const hlo::Module eval = forward_call(TensorType(DType::kF32, {2, 3}), 3, false, false);
  EXPECT_THROW(aten_batch_norm_shape(eval.main, eval.main.ops.back()), hlo::Error);
  const hlo::Module half = forward_call(TensorType(DType::kF16, {2, 3}), 3, true);
  try {
    aten_batch_norm_shape(half.main, half.main.ops.back());
    FAIL() << "a float16 input was accepted";
  } catch (const hlo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs float32 x [N, C, *]"), std::string::npos)
        << e.what();
  }
  const Executable small = compile(forward_call(TensorType(DType::kF32, {2, 8, 16}), 8, true));
  const Executable large = compile(forward_call(TensorType(DType::kF32, {2, 8, 512}), 8, true));
  ASSERT_EQ(small.kernels.size(), 1u);
  EXPECT_GT(small.kernels[0].cost.time_s, 0);
  EXPECT_GT(large.kernels[0].cost.time_s, small.kernels[0].cost.time_s);
}

}  // namespace
}  // namespace vtrn::compiler
