#include "vtrn/runtime/host_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "vtrn/hlo/dtype.h"

namespace vtrn::runtime {
namespace {

// The reference: each product and sum in double, from the operands' stored layouts.
std::vector<double> reference(const MatmulShape& s, const std::vector<float>& a,
                              const std::vector<float>& b) {
  std::vector<double> out(static_cast<std::size_t>(s.batch * s.m * s.n), 0.0);
  for (std::int64_t bb = 0; bb < s.batch; ++bb)
    for (std::int64_t i = 0; i < s.m; ++i)
      for (std::int64_t j = 0; j < s.n; ++j) {
        double acc = 0.0;
        for (std::int64_t k = 0; k < s.k; ++k) {
          const float av =
              s.lhs_transposed ? a[(bb * s.k + k) * s.m + i] : a[(bb * s.m + i) * s.k + k];
          const float bv =
              s.rhs_transposed ? b[(bb * s.n + j) * s.k + k] : b[(bb * s.k + k) * s.n + j];
          acc += static_cast<double>(av) * bv;
        }
        out[(bb * s.m + i) * s.n + j] = acc;
      }
  return out;
}

struct Case {
  std::int64_t batch, m, n, k;
  bool ta, tb;
};

class HostMatmulTest : public ::testing::TestWithParam<std::tuple<Case, MatmulInput>> {};

TEST_P(HostMatmulTest, MatchesDoublePrecisionReference) {
  const auto [c, input] = GetParam();
  MatmulShape s{c.batch, c.m, c.n, c.k, c.ta, c.tb, input};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(static_cast<std::size_t>(c.batch * c.m * c.k));
  std::vector<float> b(static_cast<std::size_t>(c.batch * c.k * c.n));
  std::vector<std::uint16_t> ah(a.size()), bh(b.size());
  // bf16 operands hold values bf16 can represent, so the reference sees the same inputs.
  for (std::size_t i = 0; i < a.size(); ++i) {
    ah[i] = hlo::f32_to_bf16(dist(rng));
    a[i] = input == MatmulInput::kBF16 ? hlo::bf16_to_f32(ah[i]) : dist(rng);
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    bh[i] = hlo::f32_to_bf16(dist(rng));
    b[i] = input == MatmulInput::kBF16 ? hlo::bf16_to_f32(bh[i]) : dist(rng);
  }
  std::vector<float> out(static_cast<std::size_t>(c.batch * c.m * c.n), -1.0f);
  if (input == MatmulInput::kBF16)
    host_matmul(s, ah.data(), bh.data(), out.data());
  else
    host_matmul(s, a.data(), b.data(), out.data());
  const std::vector<double> ref = reference(s, a, b);
  // Float32 accumulation of k products of magnitude <= 1: the error grows at most like k * eps.
  const double tol = 4.0 * static_cast<double>(std::max<std::int64_t>(c.k, 1)) * 1.2e-7;
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], tol) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, HostMatmulTest,
    ::testing::Combine(
        ::testing::Values(
            Case{1, 3, 5, 7, false, false}, Case{2, 17, 9, 33, true, false},
            Case{3, 8, 16, 64, false, true}, Case{2, 31, 12, 5, true, true},
            Case{1, 64, 128, 256, false, false}, Case{2, 4, 6, 0, false, false},
            // 2^25 multiply-adds: on CPUs without AVX-512 the first two run on OpenBLAS.
            Case{1, 256, 512, 256, false, false}, Case{1, 256, 512, 256, true, false},
            Case{1, 512, 256, 256, false, true}, Case{1, 512, 256, 256, true, true}),
        ::testing::Values(MatmulInput::kF32, MatmulInput::kBF16)));

// Strided output: rows [2, 2 + m) of a [batch, 9, n + 3] matrix, written in place; everything
// around them untouched. Also with k == 0 (zeros written through the same strides).
TEST(HostMatmul, WritesThroughOutputStrides) {
  for (std::int64_t k : {5, 0}) {
    const std::int64_t batch = 3, m = 4, n = 6, rows = 9, cols = n + 3;
    MatmulShape dense;
    dense.batch = batch, dense.m = m, dense.n = n, dense.k = k;
    MatmulShape s = dense;
    s.batch_dims = {batch};
    s.lhs_strides = {m * k, k, 1};
    s.rhs_strides = {k * n, n, 1};
    s.out_strides = {rows * cols, cols, 1};
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> a(static_cast<std::size_t>(batch * m * k)),
        b(static_cast<std::size_t>(batch * k * n));
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    std::vector<float> want(static_cast<std::size_t>(batch * m * n));
    host_matmul(dense, a.data(), b.data(), want.data());
    std::vector<float> out(static_cast<std::size_t>(batch * rows * cols), -7.0f);
    host_matmul(s, a.data(), b.data(), out.data() + 2 * cols);
    for (std::int64_t bb = 0; bb < batch; ++bb)
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
          const float got = out[static_cast<std::size_t>((bb * rows + i) * cols + j)];
          const bool inside = i >= 2 && i < 2 + m && j < n;
          const float expect =
              inside ? want[static_cast<std::size_t>((bb * m + i - 2) * n + j)] : -7.0f;
          // Another primitive than the dense one may add in another order.
          ASSERT_NEAR(got, expect, inside ? 1e-5 : 0.0)
              << "k " << k << " batch " << bb << " row " << i << " col " << j;
        }
  }
}

TEST(HostMatmul, CompilesEachShapeOnceOnAThread) {
  const std::int64_t before = host_matmul_primitives_compiled();
  MatmulShape s{1, 2, 2, 2, false, false, MatmulInput::kF32};
  const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  float out[4];
  for (int i = 0; i < 3; ++i) host_matmul(s, a, b, out);
  EXPECT_EQ(host_matmul_primitives_compiled() - before, 1);
  // [[1,2],[3,4]] x [[5,6],[7,8]] by hand.
  EXPECT_EQ(out[0], 19.0f);
  EXPECT_EQ(out[1], 22.0f);
  EXPECT_EQ(out[2], 43.0f);
  EXPECT_EQ(out[3], 50.0f);
}

}  // namespace
}  // namespace vtrn::runtime
