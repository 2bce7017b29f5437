// The convolution call (runtime/aten_conv2d.h): without an installed kernel, the convolution
// and bias against a direct loop in float64; with one, the call hands it the buffers, the
// attributes and the thread budget. Bit parity with the CPU is tests/python/test_conv_bits.py's.
#include "vtrn/runtime/aten_conv2d.h"

#include <gtest/gtest.h>

#include <vector>

#include "vtrn/compiler/aten_conv2d.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

hlo::Module conv_call(const TensorType& x, const TensorType& w,
                      const compiler::AtenConv2dConfig& c) {
  Builder b;
  std::vector<hlo::Value> in{b.param(x), b.param(w)};
  if (c.bias) in.push_back(b.param(TensorType(DType::kF32, {w.dims[0]})));
  const auto out = compiler::aten_conv2d_output_size(c, x, w);
  return b.finish(b.custom_call(std::string(compiler::kAtenConv2dTarget), in,
                                {TensorType(DType::kF32, {x.dims[0], w.dims[0], out[0], out[1]})},
                                compiler::aten_conv2d_config(c)));
}

TEST(AtenConv2dCallTest, WithoutAnInstalledKernelTheOpsGiveTheConvolution) {
  aten_conv2d::install(nullptr);
  compiler::AtenConv2dConfig c;
  c.stride = {2, 1}, c.padding = {1, 2}, c.dilation = {1, 2}, c.groups = 2, c.bias = true;
  const TensorType xt(DType::kF32, {2, 4, 7, 6}), wt(DType::kF32, {6, 2, 3, 2}),
      bt(DType::kF32, {6});
  const std::vector<HostTensor> in{
      HostTensor::from_doubles(xt, random_values(xt.num_elements(), -1, 1, 1, DType::kF32)),
      HostTensor::from_doubles(wt, random_values(wt.num_elements(), -1, 1, 2, DType::kF32)),
      HostTensor::from_doubles(bt, random_values(6, -1, 1, 3, DType::kF32))};
  const HostTensor y = run(conv_call(xt, wt, c), in)[0];
  const auto out = compiler::aten_conv2d_output_size(c, xt, wt);
  ASSERT_EQ(y.type.dims, (std::vector<std::int64_t>{2, 6, out[0], out[1]}));
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t o = 0; o < 6; ++o)
      for (std::int64_t i = 0; i < out[0]; ++i)
        for (std::int64_t j = 0; j < out[1]; ++j) {
          double acc = in[2].get(o);
          const std::int64_t g = o / 3;
          for (std::int64_t ci = 0; ci < 2; ++ci)
            for (std::int64_t ki = 0; ki < 3; ++ki)
              for (std::int64_t kj = 0; kj < 2; ++kj) {
                const std::int64_t r = i * 2 - 1 + ki, s = j - 2 + kj * 2;
                if (r < 0 || r >= 7 || s < 0 || s >= 6) continue;
                acc += in[0].get(((n * 4 + g * 2 + ci) * 7 + r) * 6 + s) *
                       in[1].get(((o * 2 + ci) * 3 + ki) * 2 + kj);
              }
          ASSERT_NEAR(y.get(((n * 6 + o) * out[0] + i) * out[1] + j), acc, 1e-5);
        }
}

TEST(AtenConv2dCallTest, AnInstalledKernelGetsTheBuffersAndAttributes) {
  static aten_conv2d::Call seen;
  aten_conv2d::install([](const aten_conv2d::Call& c) {
    seen = c;
    seen.y = nullptr;
    c.y[0] = 5.0f;
  });
  compiler::AtenConv2dConfig c;
  c.stride = {2, 2}, c.padding = {1, 0}, c.groups = 1;
  const TensorType xt(DType::kF32, {1, 3, 8, 8}), wt(DType::kF32, {4, 3, 3, 3});
  const HostTensor y = run(conv_call(xt, wt, c), {HostTensor(xt), HostTensor(wt)})[0];
  EXPECT_EQ(y.get(0), 5.0);
  EXPECT_EQ(seen.bias, nullptr);
  EXPECT_EQ(seen.x_dims, (std::array<std::int64_t, 4>{1, 3, 8, 8}));
  EXPECT_EQ(seen.w_dims, (std::array<std::int64_t, 4>{4, 3, 3, 3}));
  EXPECT_EQ(seen.stride, (std::array<std::int64_t, 2>{2, 2}));
  EXPECT_EQ(seen.padding, (std::array<std::int64_t, 2>{1, 0}));
  EXPECT_EQ(seen.threads, executor_threads());
  aten_conv2d::install(nullptr);
}

// The gradients are adjoints of the convolution, which is linear in x and in w: for any v,
// <dy, conv(v, w)> = <dx, v> and <dy, conv(x, v)> = <dw, v>; and db sums dy.
TEST(AtenConv2dCallTest, WithoutAnInstalledKernelTheBackwardGivesTheAdjoints) {
  aten_conv2d::install(nullptr, nullptr);
  compiler::AtenConv2dConfig f;
  f.stride = {2, 1}, f.padding = {1, 2}, f.dilation = {1, 2}, f.groups = 2;
  const TensorType xt(DType::kF32, {2, 4, 7, 6}), wt(DType::kF32, {6, 2, 3, 2});
  const auto out = compiler::aten_conv2d_output_size(f, xt, wt);
  const TensorType yt(DType::kF32, {2, 6, out[0], out[1]}), bt(DType::kF32, {6});
  auto random = [](const TensorType& t, unsigned seed) {
    return HostTensor::from_doubles(t, random_values(t.num_elements(), -1, 1, seed, DType::kF32));
  };
  const HostTensor x = random(xt, 4), w = random(wt, 5), dy = random(yt, 6), vx = random(xt, 7),
                   vw = random(wt, 8);
  compiler::AtenConv2dBackwardConfig c;
  c.forward = f;
  auto backward = [&] {
    Builder b;
    const hlo::Value dyv = b.param(yt), xv = b.param(xt), wv = b.param(wt);
    return run(
        b.finish(b.custom_call(std::string(compiler::kAtenConv2dBackwardTarget), {dyv, xv, wv},
                               {xt, wt, bt}, compiler::aten_conv2d_backward_config(c))),
        {dy, x, w});
  };
  const auto grads = backward();
  auto dot = [](const HostTensor& a, const HostTensor& b) {
    double s = 0;
    for (std::int64_t i = 0; i < a.type.num_elements(); ++i) s += a.get(i) * b.get(i);
    return s;
  };
  EXPECT_NEAR(dot(dy, run(conv_call(xt, wt, f), {vx, w})[0]), dot(grads[0], vx), 1e-4);
  EXPECT_NEAR(dot(dy, run(conv_call(xt, wt, f), {x, vw})[0]), dot(grads[1], vw), 1e-4);
  for (std::int64_t o = 0; o < 6; ++o) {
    double sum = 0;
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t k = 0; k < out[0] * out[1]; ++k)
        sum += dy.get((n * 6 + o) * out[0] * out[1] + k);
    EXPECT_NEAR(grads[2].get(o), sum, 1e-5);
  }
  // A gradient the mask leaves out is zeros.
  c.grads = {false, true, false};
  const auto some = backward();
  for (std::int64_t i = 0; i < xt.num_elements(); ++i) ASSERT_EQ(some[0].get(i), 0.0);
  EXPECT_EQ(some[1].get(3), grads[1].get(3));
}

}  // namespace
}  // namespace vtrn::runtime
