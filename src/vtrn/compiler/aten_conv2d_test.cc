// The convolution call's backend_config and operand checks (compiler/aten_conv2d.h), and its
// price: the convolution and bias add it stands for.
#include "vtrn/compiler/aten_conv2d.h"

#include <gtest/gtest.h>

#include "vtrn/compiler/executable.h"

namespace vtrn::compiler {
namespace {

using hlo::DType;
using hlo::TensorType;

TEST(AtenConv2dConfigTest, RoundTripsAndRejectsOtherText) {
  AtenConv2dConfig c;
  c.stride = {2, 3}, c.padding = {1, 0}, c.dilation = {1, 2}, c.groups = 4, c.bias = true;
  EXPECT_EQ(aten_conv2d_config(c), "stride=2,3;padding=1,0;dilation=1,2;groups=4;bias=1");
  const std::optional<AtenConv2dConfig> back = parse_aten_conv2d_config(aten_conv2d_config(c));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->stride, c.stride);
  EXPECT_EQ(back->padding, c.padding);
  EXPECT_EQ(back->dilation, c.dilation);
  EXPECT_EQ(back->groups, 4);
  EXPECT_TRUE(back->bias);
  for (const char* bad : {"", "stride=1,1;padding=0,0;dilation=1,1;groups=1",
                          "stride=0,1;padding=0,0;dilation=1,1;groups=1;bias=0",
                          "stride=1,1;padding=-1,0;dilation=1,1;groups=1;bias=0",
                          "stride=1,1;padding=0,0;dilation=1,1;groups=0;bias=0",
                          "stride=1;padding=0,0;dilation=1,1;groups=1;bias=0",
                          "stride=1,1;padding=0,0;dilation=1,1;groups=1;bias=0;"})
    EXPECT_FALSE(parse_aten_conv2d_config(bad).has_value()) << bad;
}

hlo::Module conv(bool as_call, const TensorType& x, const TensorType& w, const AtenConv2dConfig& c,
                 std::optional<TensorType> y = std::nullopt) {
  hlo::Builder b;
  const hlo::Value xv = b.param(x), wv = b.param(w);
  std::optional<hlo::Value> bias;
  if (c.bias) bias = b.param(TensorType(DType::kF32, {w.dims[0]}));
  if (!as_call) return b.finish({aten_conv2d_ops(b, xv, wv, bias, c)});
  std::vector<hlo::Value> in{xv, wv};
  if (bias) in.push_back(*bias);
  const auto out = aten_conv2d_output_size(c, x, w);
  return b.finish(
      b.custom_call(std::string(kAtenConv2dTarget), in,
                    {y.value_or(TensorType(DType::kF32, {x.dims[0], w.dims[0], out[0], out[1]}))},
                    aten_conv2d_config(c)));
}

TEST(AtenConv2dTest, ACallIsOneKernelPricedAsItsOps) {
  AtenConv2dConfig c;
  c.stride = {2, 2}, c.padding = {1, 1}, c.groups = 2, c.bias = true;
  const TensorType x(DType::kF32, {4, 8, 16, 16}), w(DType::kF32, {12, 4, 3, 3});
  const Executable call = compile(conv(true, x, w, c));
  ASSERT_EQ(call.kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(call.modeled_time_s(), compile(conv(false, x, w, c)).modeled_time_s());
  EXPECT_GT(call.kernels[0].cost.flops, 0);
}

TEST(AtenConv2dTest, ACallThatIsNotTheKernelsFailsToCompile) {
  AtenConv2dConfig c;
  const TensorType x(DType::kF32, {1, 4, 8, 8}), w(DType::kF32, {6, 4, 3, 3});
  EXPECT_NO_THROW(compile(conv(true, x, w, c)));
  // Another output size, a weight whose channels are not the input's, another dtype.
  EXPECT_THROW(compile(conv(true, x, w, c, TensorType(DType::kF32, {1, 6, 8, 8}))), hlo::Error);
  EXPECT_THROW(compile(conv(true, x, TensorType(DType::kF32, {6, 3, 3, 3}), c)), hlo::Error);
  EXPECT_THROW(compile(conv(true, TensorType(DType::kBF16, {1, 4, 8, 8}), w, c)), hlo::Error);
  c.groups = 4;  // 6 output channels do not split into 4 groups
  EXPECT_THROW(compile(conv(true, x, TensorType(DType::kF32, {6, 1, 3, 3}), c)), hlo::Error);
}

TEST(AtenConv2dTest, TheBackwardConfigRoundTripsAndTheCallIsPriced) {
  AtenConv2dBackwardConfig c;
  c.forward.stride = {2, 2};
  c.grads = {false, true, true};
  EXPECT_EQ(aten_conv2d_backward_config(c),
            "stride=2,2;padding=0,0;dilation=1,1;groups=1;bias=0;grads=011");
  const auto back = parse_aten_conv2d_backward_config(aten_conv2d_backward_config(c));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->grads, c.grads);
  EXPECT_EQ(back->forward.stride, c.forward.stride);
  for (const char* bad : {"stride=1,1;padding=0,0;dilation=1,1;groups=1;bias=0",
                          "stride=1,1;padding=0,0;dilation=1,1;groups=1;bias=0;grads=01",
                          "stride=1,1;padding=0,0;dilation=1,1;groups=1;bias=0;grads=012"})
    EXPECT_FALSE(parse_aten_conv2d_backward_config(bad).has_value()) << bad;
  const TensorType x(DType::kF32, {4, 8, 16, 16}), w(DType::kF32, {12, 8, 3, 3});
  const auto out = aten_conv2d_output_size(c.forward, x, w);
  const TensorType dy(DType::kF32, {4, 12, out[0], out[1]}), db(DType::kF32, {12});
  auto backward = [&](const TensorType& dy_type) {
    hlo::Builder b;
    const hlo::Value g = b.param(dy_type), xv = b.param(x), wv = b.param(w);
    return compile(b.finish(b.custom_call(std::string(kAtenConv2dBackwardTarget), {g, xv, wv},
                                          {x, w, db}, aten_conv2d_backward_config(c))));
  };
  const Executable call = backward(dy);
  ASSERT_EQ(call.kernels.size(), 1u);
  EXPECT_GT(call.kernels[0].cost.flops, 0);
  EXPECT_THROW(backward(TensorType(DType::kF32, {4, 12, 16, 16})), hlo::Error);
}

}  // namespace
}  // namespace vtrn::compiler
