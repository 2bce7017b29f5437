// Inputs passed as strided views (LoadedExecutable::run with input strides): fused loops read
// them where they lie, through a broadcast too; any other kernel, or a result that returns the
// input, gets a dense copy; an output over a view's bytes is staged. Every reference is the
// same module run on the view's elements copied out by hand, or computed by hand; inputs are
// small integers, so float32 results are exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "vtrn/hlo/parser.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

// A [rows, cols] buffer of small integers; element (i, j) is i * cols + j mod 7.
std::vector<float> buffer(int rows, int cols) {
  std::vector<float> b(static_cast<std::size_t>(rows * cols));
  for (int i = 0; i < rows * cols; ++i) b[static_cast<std::size_t>(i)] = static_cast<float>(i % 7);
  return b;
}

// The elements of the view |sizes|/|strides| from |base|, in row-major order.
std::vector<float> gather(const float* base, const Dims& sizes, const Dims& strides) {
  std::int64_t n = 1;
  for (std::int64_t s : sizes) n *= s;
  std::vector<float> out;
  std::vector<std::int64_t> idx(sizes.size(), 0);
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < sizes.size(); ++d) off += idx[d] * strides[d];
    out.push_back(base[off]);
    for (std::size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<float> run_f32(const LoadedExecutable& exe, const std::vector<const void*>& in,
                           const std::vector<const std::int64_t*>& strides, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n), -1.0f);
  const std::vector<void*> outs{out.data()};
  exe.run(in, outs, strides);
  return out;
}

// x * y + x: one fused loop over [8, 8, 128, 16] (large enough for several chunks and both
// threads of a pool).
constexpr const char* kMulAdd = R"(
func.func @main(%x: tensor<8x8x128x16xf32>, %y: tensor<8x8x128x16xf32>)
    -> tensor<8x8x128x16xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<8x8x128x16xf32>
  %1 = stablehlo.add %0, %x : tensor<8x8x128x16xf32>
  return %1 : tensor<8x8x128x16xf32>
})";

TEST(ExecutorStridedInputTest, AFusedLoopReadsARotaryHalfWhereItLies) {
  // The odd half of a [8, 128, 8, 32] projection viewed as [batch, heads, seq, 16]: strides
  // (32768, 32, 256, 2) from element 1.
  const std::vector<float> proj = buffer(8 * 128, 8 * 32);
  const Dims sizes{8, 8, 128, 16}, strides{32768, 32, 256, 2};
  const std::vector<float> x = gather(proj.data() + 1, sizes, strides);
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 5);
  LoadedExecutable exe(compiler::compile(hlo::parse_module(kMulAdd)));
  const auto n = static_cast<std::int64_t>(x.size());
  const std::vector<float> dense = run_f32(exe, {x.data(), y.data()}, {}, n);
  const std::vector<float> viewed =
      run_f32(exe, {proj.data() + 1, y.data()}, {strides.data(), nullptr}, n);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(dense[i], x[i] * y[i] + x[i]) << i;
    ASSERT_EQ(viewed[i], dense[i]) << i;
  }
}

TEST(ExecutorStridedInputTest, AViewBroadcastInsideTheLoopWalksItsSourceDims) {
  // %t is [3, 4], a transposed and column-stepped view of a 4x10 buffer, broadcast over a
  // leading dim of 2 and added to %g.
  const hlo::Module m = hlo::parse_module(R"(
func.func @main(%t: tensor<3x4xf32>, %g: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %b = stablehlo.broadcast_in_dim %t, dims = [1, 2] : (tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %0 = stablehlo.add %b, %g : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
})");
  const std::vector<float> buf = buffer(4, 10);
  const Dims strides{3, 10};  // t[i][j] = buf[j][3 i]
  std::vector<float> g(24);
  for (int i = 0; i < 24; ++i) g[static_cast<std::size_t>(i)] = static_cast<float>(i);
  LoadedExecutable exe(compiler::compile(m));
  const std::vector<float> out =
      run_f32(exe, {buf.data(), g.data()}, {strides.data(), nullptr}, 24);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        const int e = (b * 3 + i) * 4 + j;
        ASSERT_EQ(out[static_cast<std::size_t>(e)],
                  buf[static_cast<std::size_t>(j * 10 + 3 * i)] + g[e])
            << b << ", " << i << ", " << j;
      }
}

TEST(ExecutorStridedInputTest, AnExpandedInputIsReadWithStrideZero) {
  // A [4, 1] column expanded to [4, 6] (strides (1, 0)), summed along its rows.
  const hlo::Module m = hlo::parse_module(R"(
func.func @main(%x: tensor<4x6xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
})");
  LoadedExecutable exe(compiler::compile(m));
  const std::vector<float> col{1, 2, 3, 4};
  const Dims strides{1, 0};
  const std::vector<float> out = run_f32(exe, {col.data()}, {strides.data()}, 4);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[static_cast<std::size_t>(i)], 6 * col[static_cast<std::size_t>(i)]);
}

TEST(ExecutorStridedInputTest, AnInputADotReadsIsCopiedDenseFirst) {
  // %a (a transposed 3x2 view of a 2x3 buffer) feeds a dot and is also returned: both need it
  // dense, and the result must be its elements in order, not the buffer's.
  const hlo::Module m = hlo::parse_module(R"(
func.func @main(%a: tensor<3x2xf32>, %b: tensor<2x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %0, %a : tensor<3x2xf32>, tensor<3x2xf32>
})");
  LoadedExecutable exe(compiler::compile(m));
  const std::vector<float> buf{1, 2, 3, 4, 5, 6};  // [[1, 2, 3], [4, 5, 6]]
  const std::vector<float> b{1, 2, 3, 4};          // [[1, 2], [3, 4]]
  const Dims strides{1, 3};                        // a = buf^T = [[1, 4], [2, 5], [3, 6]]
  std::vector<float> dot(6, -1), copy(6, -1);
  const std::vector<const void*> in{buf.data(), b.data()};
  const std::vector<const std::int64_t*> st{strides.data(), nullptr};
  exe.run(in, std::vector<void*>{dot.data(), copy.data()}, st);
  EXPECT_EQ(copy, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(dot, (std::vector<float>{13, 18, 17, 24, 21, 30}));
  EXPECT_EQ(buf, (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(ExecutorStridedInputTest, AnOutputOverAViewIsStaged) {
  // negate(x^T) written over x's own 64x64 buffer: in place, later chunks would read elements
  // already overwritten.
  constexpr int n = 64;
  const hlo::Module m = hlo::parse_module(R"(
func.func @main(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = stablehlo.negate %x : tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
})");
  LoadedExecutable exe(compiler::compile(m));
  std::vector<float> buf = buffer(n, n);
  const std::vector<float> before = buf;
  const Dims strides{1, n};
  exe.run(std::vector<const void*>{buf.data()}, std::vector<void*>{buf.data()},
          std::vector<const std::int64_t*>{strides.data()});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      ASSERT_EQ(buf[static_cast<std::size_t>(i * n + j)],
                -before[static_cast<std::size_t>(j * n + i)])
          << i << ", " << j;
}

TEST(ExecutorStridedInputTest, StridesForTheWrongNumberOfInputsAreRefused) {
  LoadedExecutable exe(compiler::compile(hlo::parse_module(kMulAdd)));
  std::vector<float> x(8 * 8 * 128 * 16), out(x.size());
  const Dims strides{32768, 32, 256, 2};
  try {
    exe.run(std::vector<const void*>{x.data(), x.data()}, std::vector<void*>{out.data()},
            std::vector<const std::int64_t*>{strides.data()});
    FAIL() << "no error";
  } catch (const ExecError& e) {
    EXPECT_STREQ(e.what(), "the executable takes 2 inputs, 1 strides given");
  }
}

}  // namespace
}  // namespace vtrn::runtime
