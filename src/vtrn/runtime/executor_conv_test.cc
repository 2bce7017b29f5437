// The executor's stablehlo.convolution: values worked out by hand, then every window attribute
// (strides, padding including negative, input and window dilation, feature and batch groups)
// against a direct sum written from the StableHLO specification's definition, in each float
// type and in a channels-last layout.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "vtrn/hlo/convolution.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;
using hlo::ConvAttrs;
using hlo::ConvDimensionNumbers;

struct Case {
  std::string name;
  Dims in, kernel;  // [N, C, H, W], [O, C / groups, kH, kW]
  Dims stride{1, 1}, lo{0, 0}, hi{0, 0}, lhs_dil{1, 1}, rhs_dil{1, 1};
  std::int64_t fgc = 1, bgc = 1;
};

ConvAttrs attrs_of(const Case& c) {
  ConvAttrs a;
  a.window_strides = c.stride;
  a.padding_low = c.lo;
  a.padding_high = c.hi;
  a.lhs_dilation = c.lhs_dil;
  a.rhs_dilation = c.rhs_dil;
  a.dims = ConvDimensionNumbers::channels_first(2);
  a.feature_group_count = c.fgc;
  a.batch_group_count = c.bgc;
  return a;
}

// The specification's definition, element by element: result[n, o, y, x] sums, over the group's
// input features and the window, the input at the dilated, padded position (zero where that
// position is padding or a hole of the input dilation) times the kernel.
std::vector<double> reference(const Case& c, const std::vector<double>& x,
                              const std::vector<double>& w, const Dims& out) {
  const std::int64_t N = c.in[0], C = c.in[1], H = c.in[2], W = c.in[3];
  const std::int64_t O = c.kernel[0], Ci = c.kernel[1], KH = c.kernel[2], KW = c.kernel[3];
  const std::int64_t groups = c.fgc * c.bgc, og = O / groups;
  std::vector<double> y(static_cast<std::size_t>(out[0] * out[1] * out[2] * out[3]), 0.0);
  for (std::int64_t n = 0; n < out[0]; ++n)
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t oy = 0; oy < out[2]; ++oy)
        for (std::int64_t ox = 0; ox < out[3]; ++ox) {
          const std::int64_t g = o / og;
          const std::int64_t in_n = c.bgc > 1 ? g * (N / c.bgc) + n : n;
          double s = 0;
          for (std::int64_t ci = 0; ci < Ci; ++ci)
            for (std::int64_t ky = 0; ky < KH; ++ky)
              for (std::int64_t kx = 0; kx < KW; ++kx) {
                const std::int64_t py = oy * c.stride[0] + ky * c.rhs_dil[0] - c.lo[0];
                const std::int64_t px = ox * c.stride[1] + kx * c.rhs_dil[1] - c.lo[1];
                if (py < 0 || px < 0 || py % c.lhs_dil[0] || px % c.lhs_dil[1]) continue;
                const std::int64_t iy = py / c.lhs_dil[0], ix = px / c.lhs_dil[1];
                if (iy >= H || ix >= W) continue;
                const std::int64_t in_c = c.bgc > 1 ? ci : g * Ci + ci;
                s += x[static_cast<std::size_t>(((in_n * C + in_c) * H + iy) * W + ix)] *
                     w[static_cast<std::size_t>(((o * Ci + ci) * KH + ky) * KW + kx)];
              }
          y[static_cast<std::size_t>(((n * O + o) * out[2] + oy) * out[3] + ox)] = s;
        }
  return y;
}

TEST(ExecutorConvTest, OneDimensionalByHand) {
  // Cross-correlation of [1, 2, 3, 4] with [1, -1]: x[i] - x[i + 1]; padded by one zero on
  // each side the ends read 0 - 1 and 4 - 0.
  Builder b;
  TensorType xt(DType::kF32, {1, 1, 4}), wt(DType::kF32, {1, 1, 2});
  ConvAttrs a;
  a.window_strides = {1};
  a.padding_low = a.padding_high = {1};
  a.lhs_dilation = a.rhs_dilation = {1};
  a.dims = ConvDimensionNumbers::channels_first(1);
  Value x = b.param(xt), w = b.param(wt);
  auto out = run(b.finish({b.convolution(x, w, a)}), {HostTensor::from_doubles(xt, {1, 2, 3, 4}),
                                                      HostTensor::from_doubles(wt, {1, -1})});
  ASSERT_EQ(out[0].type.dims, (Dims{1, 1, 5}));
  const std::vector<double> want = {-1, -1, -1, -1, 4};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[0].get(i), want[static_cast<std::size_t>(i)]) << i;
}

TEST(ExecutorConvTest, TwoGroupsAndStrideByHand) {
  // Input channels [[1, 2, 3], [10, 20, 30]], 2 groups, kernels of width 1 with weights 2 and
  // 3, stride 2: channel 0 doubled at positions 0 and 2, channel 1 tripled.
  Builder b;
  TensorType xt(DType::kBF16, {1, 2, 3}), wt(DType::kBF16, {2, 1, 1});
  ConvAttrs a;
  a.window_strides = {2};
  a.padding_low = a.padding_high = {0};
  a.lhs_dilation = a.rhs_dilation = {1};
  a.dims = ConvDimensionNumbers::channels_first(1);
  a.feature_group_count = 2;
  Value x = b.param(xt), w = b.param(wt);
  auto out = run(
      b.finish({b.convolution(x, w, a)}),
      {HostTensor::from_doubles(xt, {1, 2, 3, 10, 20, 30}), HostTensor::from_doubles(wt, {2, 3})});
  ASSERT_EQ(out[0].type.dims, (Dims{1, 2, 2}));
  const std::vector<double> want = {2, 6, 30, 90};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].get(i), want[static_cast<std::size_t>(i)]) << i;
}

TEST(ExecutorConvTest, EveryWindowAttributeMatchesTheDefinition) {
  const std::vector<Case> cases = {
      {"plain 3x3", {2, 3, 6, 5}, {4, 3, 3, 3}},
      {"stride and padding", {2, 3, 7, 7}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}},
      {"asymmetric stride", {1, 2, 9, 8}, {3, 2, 2, 3}, {3, 1}, {0, 2}, {1, 0}},
      {"negative padding", {1, 2, 6, 6}, {2, 2, 2, 2}, {1, 1}, {-1, 0}, {-1, 2}},
      {"window dilation", {2, 2, 9, 9}, {3, 2, 3, 3}, {1, 2}, {2, 2}, {2, 2}, {1, 1}, {2, 3}},
      {"input dilation (transposed conv)",
       {1, 3, 4, 5},
       {2, 3, 3, 3},
       {1, 1},
       {2, 2},
       {2, 2},
       {2, 2}},
      {"feature groups", {2, 6, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2},
      {"depthwise", {2, 4, 6, 6}, {8, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 4},
      {"batch groups (weight gradient)",
       {4, 3, 5, 5},
       {6, 3, 3, 3},
       {1, 1},
       {0, 0},
       {0, 0},
       {1, 1},
       {1, 1},
       1,
       2},
      {"pointwise", {3, 5, 4, 4}, {7, 5, 1, 1}},
      {"window larger than the input", {1, 1, 2, 2}, {1, 1, 3, 3}},
  };
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + " " + std::string(hlo::dtype_name(d)));
      const ConvAttrs a = attrs_of(c);
      const TensorType xt(d, c.in), wt(d, c.kernel);
      const TensorType ot = hlo::infer_convolution_type(a, xt, wt);
      Builder b;
      Value x = b.param(xt), w = b.param(wt);
      const hlo::Module m = b.finish({b.convolution(x, w, a)});
      const auto xs = random_values(xt.num_elements(), -2, 2, 7, d);
      const auto ws = random_values(wt.num_elements(), -2, 2, 8, d);
      auto out = run(m, {HostTensor::from_doubles(xt, xs), HostTensor::from_doubles(wt, ws)});
      ASSERT_EQ(out[0].type, ot);
      const std::vector<double> want = reference(c, xs, ws, ot.dims);
      // float32 accumulation over |depth| terms, then one rounding to the stored type.
      const std::int64_t depth = c.kernel[1] * c.kernel[2] * c.kernel[3];
      for (std::size_t i = 0; i < want.size(); ++i) {
        const double tol = (d == DType::kF64 ? 1e-12 : 4e-7 * static_cast<double>(depth) * 4) +
                           (d == DType::kF32 || d == DType::kF64 ? 0 : tolerance(d));
        ASSERT_NEAR(out[0].get(static_cast<std::int64_t>(i)), want[i],
                    tol * std::max(1.0, std::fabs(want[i])))
            << "element " << i;
      }
    }
  }
}

TEST(ExecutorConvTest, ChannelsLastLayoutGivesTheTransposedResult) {
  // The same convolution as NCHW/OIHW -> NCHW and as NHWC/HWIO -> NHWC.
  const Case c{"", {2, 3, 5, 6}, {4, 3, 3, 2}, {2, 1}, {1, 0}, {1, 1}};
  const DType d = DType::kF32;
  const auto xs = random_values(2 * 3 * 5 * 6, -1, 1, 3, d);
  const auto ws = random_values(4 * 3 * 3 * 2, -1, 1, 4, d);
  ConvAttrs a = attrs_of(c);
  const TensorType ot =
      hlo::infer_convolution_type(a, TensorType(d, c.in), TensorType(d, c.kernel));
  const std::vector<double> want = reference(c, xs, ws, ot.dims);
  // Transpose the operands to NHWC and HWIO here.
  std::vector<double> xl(xs.size()), wl(ws.size());
  for (int n = 0; n < 2; ++n)
    for (int ch = 0; ch < 3; ++ch)
      for (int h = 0; h < 5; ++h)
        for (int w = 0; w < 6; ++w)
          xl[((n * 5 + h) * 6 + w) * 3 + ch] = xs[((n * 3 + ch) * 5 + h) * 6 + w];
  for (int o = 0; o < 4; ++o)
    for (int i = 0; i < 3; ++i)
      for (int h = 0; h < 3; ++h)
        for (int w = 0; w < 2; ++w)
          wl[((h * 2 + w) * 3 + i) * 4 + o] = ws[((o * 3 + i) * 3 + h) * 2 + w];
  a.dims = hlo::parse_conv_dimension_numbers("[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]");
  Builder b;
  const TensorType xt(d, {2, 5, 6, 3}), wt(d, {3, 2, 3, 4});
  Value x = b.param(xt), w = b.param(wt);
  auto out = run(b.finish({b.convolution(x, w, a)}),
                 {HostTensor::from_doubles(xt, xl), HostTensor::from_doubles(wt, wl)});
  const Dims& od = ot.dims;  // [N, O, H', W']
  ASSERT_EQ(out[0].type.dims, (Dims{od[0], od[2], od[3], od[1]}));
  for (std::int64_t n = 0; n < od[0]; ++n)
    for (std::int64_t o = 0; o < od[1]; ++o)
      for (std::int64_t h = 0; h < od[2]; ++h)
        for (std::int64_t w2 = 0; w2 < od[3]; ++w2) {
          const double r =
              want[static_cast<std::size_t>(((n * od[1] + o) * od[2] + h) * od[3] + w2)];
          ASSERT_NEAR(out[0].get(((n * od[2] + h) * od[3] + w2) * od[1] + o), r, 1e-5);
        }
}

}  // namespace
}  // namespace vtrn::runtime
