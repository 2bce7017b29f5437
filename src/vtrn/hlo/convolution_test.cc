// stablehlo.convolution in the IR: the shape rule against sizes worked out by hand, the text of
// its dimension numbers, the verifier's messages, and the op read from the text jax prints
// (pretty and generic) and printed back.
#include "vtrn/hlo/convolution.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/printer.h"

namespace vtrn::hlo {
namespace {

using Dims = std::vector<std::int64_t>;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

ConvAttrs attrs_2d(Dims stride, Dims lo, Dims hi, std::int64_t groups = 1) {
  ConvAttrs a;
  a.window_strides = std::move(stride);
  a.padding_low = std::move(lo);
  a.padding_high = std::move(hi);
  a.lhs_dilation = {1, 1};
  a.rhs_dilation = {1, 1};
  a.dims = ConvDimensionNumbers::channels_first(2);
  a.feature_group_count = groups;
  return a;
}

TEST(ConvolutionTest, OutputSizeByHand) {
  // in 5, window 3: positions 0..2 -> 3.
  EXPECT_EQ(conv_output_size(5, 3, 1, 0, 0, 1, 1), 3);
  // padded to 7, stride 2: windows start at 0, 2, 4 -> 3.
  EXPECT_EQ(conv_output_size(5, 3, 2, 1, 1, 1, 1), 3);
  // in 3 dilated by 2 is 5 wide (x.x.x), window 3 -> 3.
  EXPECT_EQ(conv_output_size(3, 3, 1, 0, 0, 2, 1), 3);
  // window 3 dilated by 2 is 5 wide: in 6 -> 2.
  EXPECT_EQ(conv_output_size(6, 3, 1, 0, 0, 1, 2), 2);
  // The window does not fit: 0; the padding crops past the input: -1.
  EXPECT_EQ(conv_output_size(2, 3, 1, 0, 0, 1, 1), 0);
  EXPECT_EQ(conv_output_size(2, 1, 1, -2, -1, 1, 1), -1);
  // Negative padding crops: in 6 cropped by 1 on each side is 4, window 2 -> 3.
  EXPECT_EQ(conv_output_size(6, 2, 1, -1, -1, 1, 1), 3);
}

TEST(ConvolutionTest, DimensionNumbersText) {
  EXPECT_EQ(conv_dimension_numbers_text(ConvDimensionNumbers::channels_first(2)),
            "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]");
  // Channels last, as jax writes NHWC/HWIO: spatial dims by their window index.
  const ConvDimensionNumbers d =
      parse_conv_dimension_numbers("[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]");
  EXPECT_EQ(d.input_batch, 0);
  EXPECT_EQ(d.input_feature, 3);
  EXPECT_EQ(d.input_spatial, (Dims{1, 2}));
  EXPECT_EQ(d.kernel_input_feature, 2);
  EXPECT_EQ(d.kernel_output_feature, 3);
  EXPECT_EQ(d.kernel_spatial, (Dims{0, 1}));
  EXPECT_EQ(d.output_feature, 3);
  EXPECT_EQ(conv_dimension_numbers_text(d), "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]");
  // Spatial indices out of dim order: the window's dim 0 is the operand's last dim.
  const ConvDimensionNumbers swapped =
      parse_conv_dimension_numbers("[b, f, 1, 0]x[o, i, 1, 0]->[b, f, 1, 0]");
  EXPECT_EQ(swapped.input_spatial, (Dims{3, 2}));
  // The raw form names every field.
  const ConvDimensionNumbers raw = parse_conv_dimension_numbers(
      "raw input_batch_dimension = 0, input_feature_dimension = 1, input_spatial_dimensions = "
      "[2], kernel_input_feature_dimension = 1, kernel_output_feature_dimension = 0, "
      "kernel_spatial_dimensions = [2], output_batch_dimension = 0, output_feature_dimension = "
      "1, output_spatial_dimensions = [2]");
  EXPECT_EQ(raw, ConvDimensionNumbers::channels_first(1));
  EXPECT_NE(error_of([] {
              parse_conv_dimension_numbers("[b, b, 0]x[o, i, 0]->[b, f, 0]");
            }).find("'b' appears twice in the input dims"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_conv_dimension_numbers("[b, f, 1]x[o, i, 1]->[b, f, 1]");
            }).find("spatial dim 0 is missing from the input dims"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_conv_dimension_numbers("[b, f, 0]x[o, q, 0]->[b, f, 0]");
            }).find("unexpected 'q' in the kernel dims"),
            std::string::npos);
}

TEST(ConvolutionTest, InferredTypeByHand) {
  // [N=2, C=4, 7, 7] * [O=6, C/2=2, 3, 3], 2 groups, stride 2, padding 1: (9 - 3) / 2 + 1 = 4.
  EXPECT_EQ(infer_convolution_type(attrs_2d({2, 2}, {1, 1}, {1, 1}, 2),
                                   TensorType(DType::kF32, {2, 4, 7, 7}),
                                   TensorType(DType::kF32, {6, 2, 3, 3})),
            TensorType(DType::kF32, {2, 6, 4, 4}));
  // Batch groups (the weight gradient of a grouped convolution): N=4 in 2 groups -> batch 2.
  ConvAttrs bg;
  bg.window_strides = {1};
  bg.padding_low = bg.padding_high = {0};
  bg.lhs_dilation = bg.rhs_dilation = {1};
  bg.dims = ConvDimensionNumbers::channels_first(1);
  bg.batch_group_count = 2;
  EXPECT_EQ(infer_convolution_type(bg, TensorType(DType::kBF16, {4, 3, 5}),
                                   TensorType(DType::kBF16, {6, 3, 2})),
            TensorType(DType::kBF16, {2, 6, 4}));
  // Each rule names its values.
  const TensorType x(DType::kF32, {2, 4, 7, 7});
  EXPECT_EQ(error_of([&] {
              infer_convolution_type(attrs_2d({1, 1}, {0, 0}, {0, 0}, 2), x,
                                     TensorType(DType::kF32, {6, 4, 3, 3}));
            }),
            "the kernel input feature size 4 must be the input feature size 4 divided by "
            "feature_group_count 2");
  EXPECT_EQ(error_of([&] {
              infer_convolution_type(attrs_2d({1, 1}, {0, 0}, {0, 0}, 3), x,
                                     TensorType(DType::kF32, {6, 1, 3, 3}));
            }),
            "the input feature size 4 is not a multiple of feature_group_count 3");
  EXPECT_EQ(error_of([&] {
              infer_convolution_type(attrs_2d({0, 1}, {0, 0}, {0, 0}), x,
                                     TensorType(DType::kF32, {6, 4, 3, 3}));
            }),
            "window_strides [0, 1] must be positive");
  EXPECT_EQ(error_of([&] {
              infer_convolution_type(attrs_2d({1}, {0, 0}, {0, 0}), x,
                                     TensorType(DType::kF32, {6, 4, 3, 3}));
            }),
            "window_strides [1] has 1 entries, expected one per spatial dim (2)");
  EXPECT_EQ(error_of([&] {
              infer_convolution_type(attrs_2d({1, 1}, {0, 0}, {0, 0}), x,
                                     TensorType(DType::kI32, {6, 4, 3, 3}));
            }),
            "operand 1 (kernel) has type tensor<6x4x3x3xi32>, expected the element type of "
            "operand 0 (tensor<2x4x7x7xf32>)");
  EXPECT_EQ(error_of([&] {
              infer_convolution_type(attrs_2d({1, 1}, {-5, 0}, {-4, 0}), x,
                                     TensorType(DType::kF32, {6, 4, 1, 1}));
            }),
            "spatial dim 0: padding [-5, -4] crops more than the dilated input of size 7");
}

// What jax.jit(lambda x, w: lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (1, 1)),
// dimension_numbers=("NHWC", "HWIO", "NHWC"))).lower(...).as_text() prints, and the same op in
// the generic form.
constexpr const char* kPretty = R"(module @jit_conv {
  func.func public @main(%arg0: tensor<1x4x4x1xf32>, %arg1: tensor<3x3x1x2xf32>) -> (tensor<1x2x2x2xf32>) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x4x4x1xf32>, tensor<3x3x1x2xf32>) -> tensor<1x2x2x2xf32>
    return %0 : tensor<1x2x2x2xf32>
  }
}
)";

constexpr const char* kGeneric = R"("builtin.module"() <{sym_name = "jit_conv"}> ({
  "func.func"() <{function_type = (tensor<1x1x5xf32>, tensor<2x1x2xf32>) -> tensor<1x2x3xf32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<1x1x5xf32>, %arg1: tensor<2x1x2xf32>):
    %0 = "stablehlo.convolution"(%arg0, %arg1) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f, 0]x[o, i, 0]->[b, f, 0]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1>, padding = dense<1> : tensor<1x2xi64>, rhs_dilation = array<i64: 2>, window_strides = array<i64: 2>}> : (tensor<1x1x5xf32>, tensor<2x1x2xf32>) -> tensor<1x2x3xf32>
    "func.return"(%0) : (tensor<1x2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()
)";

TEST(ConvolutionTest, ReadsJaxTextInBothForms) {
  const Module p = parse_module(kPretty);
  ASSERT_EQ(p.main.ops.size(), 1u);
  const ConvAttrs& a = p.main.ops[0].conv;
  EXPECT_EQ(a.window_strides, (Dims{2, 2}));
  EXPECT_EQ(a.padding_low, (Dims{1, 1}));
  EXPECT_EQ(a.padding_high, (Dims{1, 1}));
  EXPECT_EQ(a.lhs_dilation, (Dims{1, 1}));  // absent: 1
  EXPECT_EQ(a.dims.input_feature, 3);
  EXPECT_EQ(a.dims.kernel_output_feature, 3);
  const Module g = parse_module(kGeneric);
  const ConvAttrs& c = g.main.ops[0].conv;
  EXPECT_EQ(c.padding_low, (Dims{1}));  // the splat dense<1> fills every [low, high]
  EXPECT_EQ(c.padding_high, (Dims{1}));
  EXPECT_EQ(c.rhs_dilation, (Dims{2}));
  EXPECT_EQ(c.dims, ConvDimensionNumbers::channels_first(1));
  // Padded to 7, window 2 dilated to 3, stride 2: (7 - 3) / 2 + 1 = 3.
  EXPECT_EQ(g.main.type(g.main.results[0]), TensorType(DType::kF32, {1, 2, 3}));
}

TEST(ConvolutionTest, PrintsAndReparsesEveryAttribute) {
  Builder b("conv");
  Value x = b.param(TensorType(DType::kF32, {2, 7, 4, 4}));  // [N, H, W, C]
  Value w = b.param(TensorType(DType::kF32, {3, 2, 3, 4}));  // [O, kH, kW, C/groups]
  ConvAttrs a;
  a.window_strides = {2, 1};
  a.padding_low = {1, -1};
  a.padding_high = {0, 2};
  a.lhs_dilation = {1, 2};
  a.rhs_dilation = {2, 1};
  a.dims = parse_conv_dimension_numbers("[b, 0, 1, f]x[o, 0, 1, i]->[b, f, 0, 1]");
  Value y = b.convolution(x, w, a);
  // H: 7 + 1 padded to 8, window 2 dilated to 3, stride 2 -> 3. W: 4 dilated to 7, cropped 1
  // and padded 2 -> 8, window 3 -> 6.
  EXPECT_EQ(b.type(y), TensorType(DType::kF32, {2, 3, 3, 6}));
  const Module m = b.finish({y});
  const std::string text = print_module(m);
  EXPECT_NE(text.find("dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[o, 0, 1, i]->[b, f, 0, "
                      "1]>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("padding = dense<[[1, 0], [-1, 2]]> : tensor<2x2xi64>"), std::string::npos)
      << text;
  const Module back = parse_module(text);
  ASSERT_EQ(back.main.ops.size(), m.main.ops.size());
  EXPECT_EQ(back.main.ops.back().conv, m.main.ops.back().conv);
  EXPECT_EQ(print_module(back), text);
}

TEST(ConvolutionTest, ReversedWindowsAreRejectedWithTheAlternative) {
  std::string text = kGeneric;
  text.replace(text.find("window_strides"), 0, "window_reversal = array<i1: true>, ");
  try {
    parse_module(text);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reverse the kernel with stablehlo.reverse"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vtrn::hlo
