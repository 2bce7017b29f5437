// ATen's orders for vector norms (runtime/aten_norm.h), on values chosen so that the order
// each step implies gives a result no other order gives, worked out by hand; and the
// `custom_call @vtrn.aten_norm` kernel giving them per row, on one thread and on two.
#include "vtrn/runtime/aten_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vtrn/compiler/aten_norm.h"
#include "vtrn/hlo/dtype.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

// 4096^2 = 2^24, where float spacing is 2: a 1 added to it alone is lost (ties to even).
constexpr float kBig = 4096.0f;

// One vector: lane l holds x[l]^2, the lanes added from lane 0, so each 1 meets 2^24 alone and
// is lost. Any order adding the ones first keeps 7 of them: 2^24 + 8 after rounding.
TEST(AtenNormTest, LanesAddInOrderFromTheFirst) {
  const std::vector<float> x{kBig, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(aten_norm::norm2_vectorized(x.data(), 8), kBig);
  float ones_first = 0;
  for (int i = 7; i >= 0; --i) ones_first = ones_first + x[i] * x[i];
  EXPECT_NE(std::sqrt(ones_first), kBig);
}

// The tail after the vectors: groups of 4 add their products rounded, the last n % 4 as fused
// multiply-adds. With 2^-24 in the lanes and y = 0x1.75361cp+0, y^2 rounded and then added
// lands one float below the fused y^2 + 2^-24 (the product's discarded bits decide the add's
// rounding), and the square roots differ too.
TEST(AtenNormTest, TailGroupsOfFourRoundTheRestFuses) {
  const float tiny = std::ldexp(1.0f, -12), y = 0x1.75361cp+0f, tiny_sq = tiny * tiny;
  const float rounded = std::sqrt(y * y + tiny_sq);  // this file does not contract
  const float fused = std::sqrt(std::fma(y, y, tiny_sq));
  ASSERT_NE(rounded, fused);
  std::vector<float> x(13, 0.0f);
  x[0] = tiny;
  x[11] = y;  // n = 12: the tail is one group of 4
  EXPECT_EQ(aten_norm::norm2_vectorized(x.data(), 12), rounded);
  x[11] = 0;
  x[12] = y;  // n = 13: a group of 4, then x[12] alone
  EXPECT_EQ(aten_norm::norm2_vectorized(x.data(), 13), fused);
  const std::vector<float> short_row{tiny, y};  // shorter than a vector: a tail of 2, both fused
  EXPECT_EQ(aten_norm::norm2_vectorized(short_row.data(), 2), fused);
}

// bfloat16 steps 16 at a time: in 24 elements, x[16..23] are the tail, added after the lanes.
// Eight ones in the lanes sum to 8 first, and 2^24 + 8 is a float; a float row of the same
// values adds x[16] into lane 0 and loses every one.
TEST(AtenNormTest, BFloat16StepsTwoVectorsAtATime) {
  std::vector<float> f(24, 0.0f);
  for (int i = 0; i < 8; ++i) f[static_cast<std::size_t>(i)] = 1;
  f[16] = kBig;
  std::vector<std::uint16_t> h;
  for (float v : f) h.push_back(hlo::f32_to_bf16(v));
  EXPECT_EQ(aten_norm::norm2_vectorized(h.data(), 24), std::sqrt(16777224.0f));
  EXPECT_EQ(aten_norm::norm2_vectorized(f.data(), 24), kBig);
}

// The scalar loop adds in order: 1 + 1 + ... then 2^24 keeps them; the other way round loses.
TEST(AtenNormTest, InOrderAddsLeftToRight) {
  const std::vector<float> ones_first{1, 1, 1, 1, kBig};
  EXPECT_EQ(aten_norm::norm_in_order(ones_first.data(), 5, 2), std::sqrt(16777220.0f));
  const std::vector<float> big_first{kBig, 1, 1, 1, 1};
  EXPECT_EQ(aten_norm::norm_in_order(big_first.data(), 5, 2), kBig);
  // Order 1: |x| summed, no root; 2^24 + 1 is lost, 1 + 1 + 2^24 is not.
  const std::vector<float> l1{-16777216.0f, 1, 1};
  EXPECT_EQ(aten_norm::norm_in_order(l1.data(), 3, 1), 16777216.0f);
  const std::vector<float> l1_small_first{1, 1, -16777216.0f};
  EXPECT_EQ(aten_norm::norm_in_order(l1_small_first.data(), 3, 1), 16777218.0f);
}

// The call gives each row's norm as the functions above, rounded once to bfloat16 for
// bfloat16 rows, on one thread and split over two.
TEST(AtenNormTest, CallGivesEachRowsNorm) {
  const int threads_before = executor_threads();
  const std::int64_t rows = 64, n = 2053;  // 64 * 2053 elements: enough to be split
  const std::vector<double> xs = random_values(rows * n, -3, 3, 5, DType::kF32);
  for (DType d : {DType::kF32, DType::kBF16})
    for (const compiler::AtenNormConfig c :
         {compiler::AtenNormConfig{2, true}, compiler::AtenNormConfig{2, false},
          compiler::AtenNormConfig{1, false}})
      for (int threads : {1, 2}) {
        set_executor_threads(threads);
        const TensorType in(d, {rows, n});
        Builder b;
        const hlo::Module m =
            b.finish(b.custom_call(std::string(compiler::kAtenNormTarget), {b.param(in)},
                                   {TensorType(d, {rows})}, compiler::aten_norm_config(c)));
        const HostTensor x = HostTensor::from_doubles(in, xs);
        const std::vector<HostTensor> out = run(m, {x});
        for (std::int64_t r = 0; r < rows; ++r) {
          std::vector<float> row(static_cast<std::size_t>(n));
          std::vector<std::uint16_t> bits(row.size());
          for (std::int64_t i = 0; i < n; ++i) {
            row[static_cast<std::size_t>(i)] = static_cast<float>(x.get(r * n + i));
            bits[static_cast<std::size_t>(i)] = hlo::f32_to_bf16(row[static_cast<std::size_t>(i)]);
          }
          float want;
          if (d == DType::kF32)
            want = c.vectorized ? aten_norm::norm2_vectorized(row.data(), n)
                                : aten_norm::norm_in_order(row.data(), n, c.ord);
          else
            want = hlo::bf16_to_f32(
                hlo::f32_to_bf16(c.vectorized ? aten_norm::norm2_vectorized(bits.data(), n)
                                              : aten_norm::norm_in_order(bits.data(), n, c.ord)));
          ASSERT_EQ(out[0].get(r), want)
              << "row " << r << " threads " << threads << " " << compiler::aten_norm_config(c);
        }
      }
  set_executor_threads(threads_before);
}

}  // namespace
}  // namespace vtrn::runtime
