// ATen's float32 mm and bmm as the executor reproduces them: the sgemm arguments against
// addmm_impl_cpu_'s and normalize_last_dims' rules worked by hand, the products through a
// stand-in sgemm (a column-major loop written here) against a double-precision reference, bmm's
// small products against the loop ATen runs for them, and dot_general taking this path only for
// float32 with an sgemm installed.
#include "vtrn/runtime/aten_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "vtrn/compiler/aten_addmm.h"

#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;
namespace am = aten_matmul;

int g_sgemm_calls = 0;
// The alpha and beta the stand-in expects: mm's and bmm's calls pass 1 and 0.
float g_alpha = 1, g_beta = 0;

// BLAS's column-major sgemm: c[i + j*ldc] = alpha * sum_p op(a)[i, p] * op(b)[p, j] plus, unless
// beta is 0, beta * c[i + j*ldc].
void column_major_sgemm(const char* transa, const char* transb, const int* m, const int* n,
                        const int* k, const float* alpha, const float* a, const int* lda,
                        const float* b, const int* ldb, const float* beta, float* c,
                        const int* ldc) {
  ++g_sgemm_calls;
  EXPECT_EQ(*alpha, g_alpha);
  EXPECT_EQ(*beta, g_beta);
  // The leading dimensions must be valid for BLAS, as ATen's use_blas_gemm requires.
  EXPECT_GE(*lda, std::max(1, *transa == 'N' ? *m : *k));
  EXPECT_GE(*ldb, std::max(1, *transb == 'N' ? *k : *n));
  EXPECT_GE(*ldc, std::max(1, *m));
  for (int i = 0; i < *m; ++i)
    for (int j = 0; j < *n; ++j) {
      double s = 0;
      for (int p = 0; p < *k; ++p) {
        const float av = *transa == 'N' ? a[i + p * *lda] : a[p + i * *lda];
        const float bv = *transb == 'N' ? b[p + j * *ldb] : b[j + p * *ldb];
        s += static_cast<double>(av) * bv;
      }
      float& out = c[i + j * *ldc];
      out = static_cast<float>(*alpha * s + (*beta == 0.0f ? 0.0 : *beta * out));
    }
}

class AtenMatmulTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_sgemm_calls = 0;
    g_alpha = 1;
    g_beta = 0;
  }
  void TearDown() override { am::install(nullptr); }
};

// An expected sgemm call: the product's m, n, k and layouts, then the arguments.
struct CallCase {
  std::int64_t m, n, k;
  bool lt, rt;
  char ta, tb;
  std::int64_t gm, gn, gk, lda, ldb, ldc;
  bool a_is_lhs;
};

void expect_call(const am::SgemmCall& call, const CallCase& c) {
  const std::string at = std::to_string(c.m) + "x" + std::to_string(c.k) + "x" +
                         std::to_string(c.n) + (c.lt ? " lhs^T" : "") + (c.rt ? " rhs^T" : "");
  EXPECT_EQ(call.transa, c.ta) << at;
  EXPECT_EQ(call.transb, c.tb) << at;
  EXPECT_EQ(call.m, c.gm) << at;
  EXPECT_EQ(call.n, c.gn) << at;
  EXPECT_EQ(call.k, c.gk) << at;
  EXPECT_EQ(call.lda, c.lda) << at;
  EXPECT_EQ(call.ldb, c.ldb) << at;
  EXPECT_EQ(call.ldc, c.ldc) << at;
  EXPECT_EQ(call.a_is_lhs, c.a_is_lhs) << at;
  EXPECT_FALSE(call.copy_a || call.copy_b) << at;
}

TEST(AtenSgemmCallTest, ArgumentsFollowAtensRules) {
  const CallCase cases[] = {
      // Row-major result: computed as its transpose, rhs first.
      {4, 3, 5, false, false, 'N', 'N', 3, 4, 5, 3, 5, 3, false},
      {4, 3, 5, true, true, 'T', 'T', 3, 4, 5, 5, 4, 3, false},
      {4, 3, 5, true, false, 'N', 'T', 3, 4, 5, 3, 4, 3, false},
      {4, 3, 5, false, true, 'T', 'N', 3, 4, 5, 5, 5, 3, false},
      // A one-column result is column-major as it is: lhs first, normalize_last_dims sets ldc.
      {4, 1, 5, false, false, 'T', 'T', 4, 1, 5, 5, 1, 4, true},
      // k == 1: the rhs [1, 3] (strides 3, 1) reads as not transposed with lda 3.
      {4, 3, 1, false, false, 'N', 'N', 3, 4, 1, 3, 1, 3, false},
  };
  for (const CallCase& c : cases) expect_call(am::aten_sgemm_call(c.m, c.n, c.k, c.lt, c.rt), c);
}

TEST(AtenSgemmCallTest, BmmArgumentsFollowBaddbmmWithGemm) {
  const CallCase cases[] = {
      {4, 3, 5, false, false, 'N', 'N', 3, 4, 5, 3, 5, 3, false},
      {4, 3, 5, true, true, 'T', 'T', 3, 4, 5, 5, 4, 3, false},
      // One result column: still the rhs first, unlike mm (whose call is 'T', 'T', 20, 1, 20).
      {20, 1, 20, false, false, 'N', 'N', 1, 20, 20, 1, 20, 1, false},
  };
  for (const CallCase& c : cases) expect_call(am::aten_bmm_call(c.m, c.n, c.k, c.lt, c.rt), c);
  const am::SgemmCall mm = am::aten_sgemm_call(20, 1, 20, false, false);
  EXPECT_EQ(mm.transa, 'T');
  EXPECT_TRUE(mm.a_is_lhs);
}

int g_batch_calls = 0;

// MKL's cblas_sgemm_batch for one group, through the column-major stand-in.
void batch_sgemm(int layout, const int* transa, const int* transb, const int* m, const int* n,
                 const int* k, const float* alpha, const float** a, const int* lda, const float** b,
                 const int* ldb, const float* beta, float** c, const int* ldc, int group_count,
                 const int* group_size) {
  ++g_batch_calls;
  EXPECT_EQ(layout, 102);
  EXPECT_EQ(group_count, 1);
  const char ta = *transa == 111 ? 'N' : 'T', tb = *transb == 111 ? 'N' : 'T';
  for (int i = 0; i < *group_size; ++i)
    column_major_sgemm(&ta, &tb, m, n, k, alpha, a[i], lda, b[i], ldb, beta, c[i], ldc);
}

TEST_F(AtenMatmulTest, BatchedProductsTakeTheBatchedCall) {
  am::install(column_major_sgemm, batch_sgemm);
  g_batch_calls = 0;
  const std::int64_t batch = 4, m = 8, n = 6, k = 10;
  const auto lv = random_values(batch * m * k, -1, 1, 3, DType::kF32);
  const auto rv = random_values(batch * k * n, -1, 1, 4, DType::kF32);
  std::vector<float> l(lv.begin(), lv.end()), r(rv.begin(), rv.end());
  std::vector<float> o(static_cast<std::size_t>(batch * m * n));
  ASSERT_TRUE(am::matmul(true, batch, m, n, k, l.data(), false, r.data(), true, o.data()));
  EXPECT_EQ(g_batch_calls, 1);
  EXPECT_EQ(g_sgemm_calls, static_cast<int>(batch));  // the stand-in's own per-matrix calls
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (std::int64_t p = 0; p < k; ++p)
          want += static_cast<double>(l[(b * m + i) * k + p]) * r[(b * n + j) * k + p];
        ASSERT_NEAR(o[(b * m + i) * n + j], want, 1e-5);
      }
}

TEST_F(AtenMatmulTest, FalseWithoutAnSgemm) {
  float l[4] = {1, 2, 3, 4}, r[4] = {1, 0, 0, 1}, o[4] = {9, 9, 9, 9};
  EXPECT_FALSE(am::installed());
  EXPECT_FALSE(am::matmul(false, 1, 2, 2, 2, l, false, r, false, o));
  EXPECT_EQ(o[0], 9.0f);
}

// Every layout, degenerate dims included, through the stand-in: the product of the operands as
// stored, whatever arguments the rules chose.
TEST_F(AtenMatmulTest, EveryLayoutGivesTheProduct) {
  am::install(column_major_sgemm);
  const std::int64_t dims[][3] = {{4, 3, 5}, {1, 5, 3}, {5, 1, 3}, {5, 3, 1},
                                  {1, 1, 1}, {1, 7, 1}, {3, 1, 1}, {17, 9, 33}};
  for (const auto& mnk : dims) {
    const std::int64_t m = mnk[0], n = mnk[1], k = mnk[2], batch = 3;
    const auto lv = random_values(batch * m * k, -1, 1, 1, DType::kF32);
    const auto rv = random_values(batch * k * n, -1, 1, 2, DType::kF32);
    std::vector<float> l(lv.begin(), lv.end()), r(rv.begin(), rv.end());
    for (bool lt : {false, true})
      for (bool rt : {false, true}) {
        std::vector<float> o(static_cast<std::size_t>(batch * m * n), -7);
        const int before = g_sgemm_calls;
        ASSERT_TRUE(am::matmul(true, batch, m, n, k, l.data(), lt, r.data(), rt, o.data()));
        const bool small = k * m * n < 400;
        EXPECT_EQ(g_sgemm_calls - before, small ? 0 : batch);
        for (std::int64_t b = 0; b < batch; ++b)
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
              double want = 0;
              for (std::int64_t p = 0; p < k; ++p) {
                const float a = lt ? l[b * m * k + p * m + i] : l[b * m * k + i * k + p];
                const float c = rt ? r[b * k * n + j * k + p] : r[b * k * n + p * n + j];
                want += static_cast<double>(a) * c;
              }
              ASSERT_NEAR(o[(b * m + i) * n + j], want, 1e-5)
                  << m << "x" << k << "x" << n << " lt " << lt << " rt " << rt;
            }
        // mm: always sgemm, one call.
        std::vector<float> o2(static_cast<std::size_t>(m * n));
        ASSERT_TRUE(am::matmul(false, 1, m, n, k, l.data(), lt, r.data(), rt, o2.data()));
        EXPECT_EQ(g_sgemm_calls - before, (small ? 0 : batch) + 1);
      }
  }
}

// mm_out into slices (_grouped_mm's CPU loop): a row block of a wider result, a column block
// (leading dimension the full width), a column slice of the lhs; an lhs that fits neither
// layout is copied dense first, as ATen clones it; k == 0 gives zeros.
TEST_F(AtenMatmulTest, StridedProductsWriteTheirSlices) {
  am::install(column_major_sgemm);
  const std::int64_t m = 5, n = 3, k = 4, width = 7, depth = 9;
  const auto lv = random_values(m * depth * 2, -1, 1, 3, DType::kF32);
  const auto rv = random_values(depth * width, -1, 1, 4, DType::kF32);
  const std::vector<float> l(lv.begin(), lv.end()), r(rv.begin(), rv.end());
  struct Case {
    std::int64_t ls[2], rs[2], os[2];
  };
  const Case cases[] = {
      {{depth, 1}, {width, 1}, {width, 1}},      // slices with leading strides
      {{1, m}, {width, 1}, {n, 1}},              // a transposed lhs
      {{2 * depth, 2}, {width, 1}, {width, 1}},  // an lhs that fits neither layout
  };
  for (const Case& c : cases) {
    std::vector<float> o(static_cast<std::size_t>(m * width), -7);
    const int before = g_sgemm_calls;
    ASSERT_TRUE(am::mm_strided(m, n, k, l.data() + 1, c.ls, r.data() + 2, c.rs, o.data(), c.os));
    EXPECT_EQ(g_sgemm_calls - before, 1);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (std::int64_t p = 0; p < k; ++p)
          want += static_cast<double>(l[1 + i * c.ls[0] + p * c.ls[1]]) *
                  r[2 + p * c.rs[0] + j * c.rs[1]];
        ASSERT_NEAR(o[i * c.os[0] + j * c.os[1]], want, 1e-5) << i << "," << j;
      }
    if (c.os[0] == width)  // the columns past the slice are not written
      for (std::int64_t i = 0; i < m; ++i) EXPECT_EQ(o[i * width + n], -7.0f);
  }
  std::vector<float> o(static_cast<std::size_t>(m * width), -7);
  const std::int64_t dense[2] = {width, 1};
  ASSERT_TRUE(am::mm_strided(m, n, 0, l.data(), dense, r.data(), dense, o.data(), dense));
  EXPECT_EQ(o[0], 0.0f);
  EXPECT_EQ(o[n], -7.0f);
  am::install(nullptr);
  EXPECT_FALSE(am::mm_strided(m, n, k, l.data(), dense, r.data(), dense, o.data(), dense));
}

// bmm's small products add each rounded product to a float sum in turn, not in double.
TEST_F(AtenMatmulTest, SmallBatchedProductsAddInTurn) {
  am::install(column_major_sgemm);
  const std::int64_t m = 2, n = 2, k = 90;  // 360 multiply-adds
  const auto lv = random_values(m * k, -1, 1, 5, DType::kF32);
  const auto rv = random_values(k * n, -1, 1, 6, DType::kF32);
  std::vector<float> l(lv.begin(), lv.end()), r(rv.begin(), rv.end()), o(4);
  ASSERT_TRUE(am::matmul(true, 1, m, n, k, l.data(), false, r.data(), false, o.data()));
  EXPECT_EQ(g_sgemm_calls, 0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        volatile float prod = l[i * k + p] * r[p * n + j];
        acc = acc + prod;
      }
      EXPECT_EQ(o[i * n + j], acc);
    }
}

// Only a dot marked as torch.mm's or torch.bmm's (Op::sgemm), and only in float32.
TEST_F(AtenMatmulTest, DotGeneralTakesItWhenMarkedAndFloat32) {
  am::install(column_major_sgemm);
  for (DType d : {DType::kF32, DType::kBF16}) {
    for (bool marked : {true, false}) {
      Builder b;
      TensorType lt(d, {16, 32}), rt(d, {32, 8});
      Value x = b.param(lt), y = b.param(rt);
      hlo::Module mod =
          b.finish({b.dot_general(x, y, hlo::DotDims{{}, {}, {1}, {0}}, std::nullopt, marked)});
      g_sgemm_calls = 0;
      auto out = run(mod, {HostTensor::from_doubles(lt, random_values(16 * 32, -1, 1, 1, d)),
                           HostTensor::from_doubles(rt, random_values(32 * 8, -1, 1, 2, d))});
      EXPECT_EQ(g_sgemm_calls, d == DType::kF32 && marked ? 1 : 0)
          << hlo::dtype_name(d) << (marked ? " marked" : "");
    }
  }
}

// addmm: the result holds self on entry, and sgemm gets ATen's alpha and beta to add the
// product onto it; with beta 0 self is never read (NaN there stays out).
TEST_F(AtenMatmulTest, AddmmAccumulatesOntoSelfWithAlphaAndBeta) {
  am::install(column_major_sgemm);
  const std::int64_t m = 5, n = 4, k = 3;
  const auto lv = random_values(m * k, -1, 1, 7, DType::kF32);
  const auto rv = random_values(k * n, -1, 1, 8, DType::kF32);
  std::vector<float> l(lv.begin(), lv.end()), r(rv.begin(), rv.end());
  for (float beta : {1.0f, 0.5f, 0.0f}) {
    g_alpha = 1.5f;
    g_beta = beta;
    const float self = beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : 2.0f;
    std::vector<float> o(static_cast<std::size_t>(m * n), self);
    g_sgemm_calls = 0;
    ASSERT_TRUE(am::addmm(m, n, k, l.data(), false, r.data(), false, 1.5f, beta, o.data()));
    EXPECT_EQ(g_sgemm_calls, 1);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double prod = 0;
        for (std::int64_t p = 0; p < k; ++p)
          prod += static_cast<double>(l[i * k + p]) * r[p * n + j];
        const double want = 1.5 * prod + (beta == 0.0f ? 0.0 : beta * 2.0);
        ASSERT_NEAR(o[i * n + j], want, 1e-5) << "beta " << beta;
      }
  }
  // k == 0: no sgemm; self times beta, or zeros for beta 0 (addmm_impl_cpu_).
  for (float beta : {0.5f, 0.0f}) {
    std::vector<float> o(static_cast<std::size_t>(m * n), 3.0f);
    g_sgemm_calls = 0;
    ASSERT_TRUE(am::addmm(m, n, 0, l.data(), false, r.data(), false, 1.0f, beta, o.data()));
    EXPECT_EQ(g_sgemm_calls, 0);
    for (float v : o) EXPECT_EQ(v, beta == 0.0f ? 0.0f : 1.5f);
  }
  am::install(nullptr);
  std::vector<float> o(static_cast<std::size_t>(m * n), 9.0f);
  EXPECT_FALSE(am::addmm(m, n, k, l.data(), false, r.data(), false, 1.0f, 1.0f, o.data()));
  EXPECT_EQ(o[0], 9.0f);
}

// The module form (compiler/aten_addmm.h), a weight read where it lies transposed: with the
// sgemm installed one call of it, without one BLAS; both alpha * x w^T + beta * bias.
TEST_F(AtenMatmulTest, AddmmCustomCallRunsWithAndWithoutAtensSgemm) {
  const std::int64_t m = 6, n = 4, k = 5;
  const auto xv = random_values(m * k, -1, 1, 9, DType::kF32);
  const auto wv = random_values(n * k, -1, 1, 10, DType::kF32);
  const auto bv = random_values(n, -1, 1, 11, DType::kF32);
  for (bool installed : {true, false}) {
    if (installed) am::install(column_major_sgemm);
    g_alpha = 0.25f;
    g_beta = 2.0f;
    Builder b;
    Value x = b.param(TensorType(DType::kF32, {m, k}));
    Value w = b.param(TensorType(DType::kF32, {n, k}));
    Value bias = b.param(TensorType(DType::kF32, {n}));
    Value alpha = b.param(TensorType(DType::kF32, {}));
    Value c = b.broadcast_in_dim(bias, {m, n}, {1});
    const std::string config = compiler::aten_addmm_config({2.0, false, true});
    hlo::Module mod =
        b.finish(b.custom_call(std::string(compiler::kAtenAddmmTarget), {c, x, w, alpha},
                               {TensorType(DType::kF32, {m, n})}, config));
    g_sgemm_calls = 0;
    auto out = run(mod, {HostTensor::from_doubles(TensorType(DType::kF32, {m, k}), xv),
                         HostTensor::from_doubles(TensorType(DType::kF32, {n, k}), wv),
                         HostTensor::from_doubles(TensorType(DType::kF32, {n}), bv),
                         HostTensor::from_doubles(TensorType(DType::kF32, {}), {0.25})});
    EXPECT_EQ(g_sgemm_calls, installed ? 1 : 0);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double prod = 0;
        for (std::int64_t p = 0; p < k; ++p)
          prod += static_cast<double>(static_cast<float>(xv[i * k + p])) *
                  static_cast<float>(wv[j * k + p]);
        const double want = 0.25 * prod + 2.0 * static_cast<float>(bv[j]);
        EXPECT_NEAR(out[0].get(i * n + j), want, 1e-5) << (installed ? "installed" : "BLAS");
      }
    am::install(nullptr);
  }
}

}  // namespace
}  // namespace vtrn::runtime
