#include "vtrn/runtime/aten_matmul.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <utility>
#include <vector>

namespace vtrn::runtime::aten_matmul {
namespace {

std::atomic<Sgemm> g_sgemm{nullptr};
std::atomic<SgemmBatch> g_sgemm_batch{nullptr};

// cpublas::gemm's normalize_last_dims: leading dimensions BLAS accepts for size-1 dims.
void normalize_last_dims(SgemmCall& call) {
  if (call.n == 1) call.ldc = call.m;
  if (call.transa != 'N') {
    if (call.m == 1) call.lda = call.k;
  } else if (call.k == 1) {
    call.lda = call.m;
  }
  if (call.transb != 'N') {
    if (call.k == 1) call.ldb = call.n;
  } else if (call.n == 1) {
    call.ldb = call.k;
  }
}

// cpublas's use_blas_gemm: arguments sgemm takes (ATen runs its own gemm otherwise).
bool blas_accepts(const SgemmCall& c) {
  for (std::int64_t v : {c.m, c.n, c.k, c.lda, c.ldb, c.ldc})
    if (v > INT_MAX) return false;
  return c.lda >= std::max<std::int64_t>(1, c.transa == 'N' ? c.m : c.k) &&
         c.ldb >= std::max<std::int64_t>(1, c.transb == 'N' ? c.k : c.n) &&
         c.ldc >= std::max<std::int64_t>(1, c.m);
}

// A matrix operand as addmm_impl_cpu_ sees it: sizes and strides of its [rows, cols] view.
struct View {
  std::int64_t size[2];
  std::int64_t stride[2];
  bool is_lhs;
};

// bmm's loop for products under 400 multiply-adds (baddbmm_cpu_kernel): each result element
// adds its k products from 0 in float, in turn, each product rounded.
void small_product(std::int64_t m, std::int64_t n, std::int64_t k, const float* lhs,
                   bool lhs_transposed, const float* rhs, bool rhs_transposed, float* out) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const float a = lhs_transposed ? lhs[p * m + i] : lhs[i * k + p];
        const float b = rhs_transposed ? rhs[j * k + p] : rhs[p * n + j];
        const float prod = a * b;
        acc = acc + prod;
      }
      out[i * n + j] = acc;
    }
}

}  // namespace

void install(Sgemm sgemm, SgemmBatch batch) {
  g_sgemm_batch.store(batch, std::memory_order_release);
  g_sgemm.store(sgemm, std::memory_order_release);
}

bool installed() { return g_sgemm.load(std::memory_order_acquire) != nullptr; }

SgemmCall aten_sgemm_call(std::int64_t m, std::int64_t n, std::int64_t k, bool lhs_transposed,
                          bool rhs_transposed) {
  // addmm_impl_cpu_ with a fresh dense result [m, n] (strides n, 1).
  const std::int64_t lhs_strides[2] = {lhs_transposed ? 1 : k, lhs_transposed ? m : 1};
  const std::int64_t rhs_strides[2] = {rhs_transposed ? 1 : n, rhs_transposed ? k : 1};
  const std::int64_t out_strides[2] = {n, 1};
  return strided_sgemm_call(m, n, k, lhs_strides, rhs_strides, out_strides);
}

SgemmCall strided_sgemm_call(std::int64_t m, std::int64_t n, std::int64_t k,
                             const std::int64_t lhs_strides[2], const std::int64_t rhs_strides[2],
                             const std::int64_t out_strides[2]) {
  View m1{{m, k}, {lhs_strides[0], lhs_strides[1]}, true};
  View m2{{k, n}, {rhs_strides[0], rhs_strides[1]}, false};
  const std::int64_t rsize[2] = {m, n}, rstride[2] = {out_strides[0], out_strides[1]};
  // The result as column-major c unless it is only row-major: then c is its transpose and the
  // operands swap (c^T = m2^T m1^T).
  const bool tc =
      !(rstride[0] == 1 && (rsize[1] == 1 || rstride[1] >= std::max<std::int64_t>(1, rsize[0])));
  if (tc) std::swap(m1, m2);
  SgemmCall call;
  call.m = rsize[tc ? 1 : 0];
  call.n = rsize[tc ? 0 : 1];
  call.k = m1.size[tc ? 0 : 1];
  call.a_is_lhs = m1.is_lhs;
  const int i0 = tc ? 1 : 0, i1 = tc ? 0 : 1;
  auto cast = [&](View& v, std::int64_t rows_needed, std::int64_t cols_needed, bool* copy) {
    if (v.stride[i0] == 1 && v.stride[i1] >= std::max<std::int64_t>(1, rows_needed)) return false;
    if (v.stride[i1] == 1 && v.stride[i0] >= std::max<std::int64_t>(1, cols_needed)) return true;
    *copy = true;  // a row-major dense clone
    v.stride[0] = v.size[1];
    v.stride[1] = 1;
    return !tc;
  };
  const bool ta = cast(m1, call.m, call.k, &call.copy_a);
  const bool tb = cast(m2, call.k, call.n, &call.copy_b);
  call.lda = m1.stride[ta == tc ? 1 : 0];
  call.ldb = m2.stride[tb == tc ? 1 : 0];
  call.ldc = rstride[tc ? 0 : 1];
  call.transa = ta ? 'T' : 'N';
  call.transb = tb ? 'T' : 'N';
  normalize_last_dims(call);
  return call;
}

SgemmCall aten_bmm_call(std::int64_t m, std::int64_t n, std::int64_t k, bool lhs_transposed,
                        bool rhs_transposed) {
  // baddbmm_with_gemm_: c^T = mat2^T mat1^T with each matrix's strides as bmm's operand has
  // them (mat1 = lhs [b, m, k], mat2 = rhs [b, k, n], the result dense [b, m, n]).
  const std::int64_t s1[2] = {lhs_transposed ? 1 : k, lhs_transposed ? m : 1};
  const std::int64_t s2[2] = {rhs_transposed ? 1 : n, rhs_transposed ? k : 1};
  const bool ta = s2[0] == 1 && s2[1] >= k;  // is_transposed(mat2)
  const bool tb = s1[0] == 1 && s1[1] >= m;  // is_transposed(mat1)
  SgemmCall call;
  call.transa = ta ? 'T' : 'N';
  call.transb = tb ? 'T' : 'N';
  call.m = n;
  call.n = m;
  call.k = k;
  call.lda = s2[ta ? 1 : 0];
  call.ldb = s1[tb ? 1 : 0];
  call.ldc = n;
  call.a_is_lhs = false;
  normalize_last_dims(call);
  return call;
}

namespace {

// sgemm's call per batch, with ATen's row-major dense copies where neither layout fits.
void call_sgemm(Sgemm sgemm, const SgemmCall& call, std::int64_t batch, std::int64_t m,
                std::int64_t n, std::int64_t k, const float* lhs, bool lhs_transposed,
                const float* rhs, bool rhs_transposed, float alpha, float beta, float* out) {
  const int im = static_cast<int>(call.m), in = static_cast<int>(call.n),
            ik = static_cast<int>(call.k), lda = static_cast<int>(call.lda),
            ldb = static_cast<int>(call.ldb), ldc = static_cast<int>(call.ldc);
  std::vector<float> copy_a, copy_b;
  auto dense = [](const float* p, bool transposed, std::int64_t rows, std::int64_t cols,
                  std::vector<float>& buf) -> const float* {
    if (!transposed) return p;
    buf.resize(static_cast<std::size_t>(rows * cols));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) buf[i * cols + j] = p[j * rows + i];
    return buf.data();
  };
  for (std::int64_t bi = 0; bi < batch; ++bi) {
    const float* l = lhs + bi * m * k;
    const float* r = rhs + bi * k * n;
    const float* a = call.a_is_lhs ? l : r;
    const float* b = call.a_is_lhs ? r : l;
    if (call.copy_a)
      a = call.a_is_lhs ? dense(l, lhs_transposed, m, k, copy_a)
                        : dense(r, rhs_transposed, k, n, copy_a);
    if (call.copy_b)
      b = call.a_is_lhs ? dense(r, rhs_transposed, k, n, copy_b)
                        : dense(l, lhs_transposed, m, k, copy_b);
    sgemm(&call.transa, &call.transb, &im, &in, &ik, &alpha, a, &lda, b, &ldb, &beta,
          out + bi * m * n, &ldc);
  }
}

}  // namespace

bool addmm(std::int64_t m, std::int64_t n, std::int64_t k, const float* lhs, bool lhs_transposed,
           const float* rhs, bool rhs_transposed, float alpha, float beta, float* out) {
  const Sgemm sgemm = g_sgemm.load(std::memory_order_acquire);
  if (sgemm == nullptr) return false;
  // addmm_impl_cpu_ before any BLAS: nothing to compute, or (k == 0) zeros or self times beta.
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    for (float* p = out; p != out + m * n; ++p) *p = beta == 0.0f ? 0.0f : *p * beta;
    return true;
  }
  const SgemmCall call = aten_sgemm_call(m, n, k, lhs_transposed, rhs_transposed);
  if (!blas_accepts(call)) return false;
  call_sgemm(sgemm, call, 1, m, n, k, lhs, lhs_transposed, rhs, rhs_transposed, alpha, beta, out);
  return true;
}

bool matmul(bool batched, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
            const float* lhs, bool lhs_transposed, const float* rhs, bool rhs_transposed,
            float* out) {
  const Sgemm sgemm = g_sgemm.load(std::memory_order_acquire);
  if (sgemm == nullptr) return false;
  const bool small = batched && k * m * n < 400;
  const SgemmCall call = batched ? aten_bmm_call(m, n, k, lhs_transposed, rhs_transposed)
                                 : aten_sgemm_call(m, n, k, lhs_transposed, rhs_transposed);
  if (!small && !blas_accepts(call)) return false;
  if (m == 0 || n == 0 || batch == 0) return true;
  if (k == 0) {
    std::fill(out, out + batch * m * n, 0.0f);
    return true;
  }
  if (small) {
    for (std::int64_t b = 0; b < batch; ++b)
      small_product(m, n, k, lhs + b * m * k, lhs_transposed, rhs + b * k * n, rhs_transposed,
                    out + b * m * n);
    return true;
  }
  const int im = static_cast<int>(call.m), in = static_cast<int>(call.n),
            ik = static_cast<int>(call.k), lda = static_cast<int>(call.lda),
            ldb = static_cast<int>(call.ldb), ldc = static_cast<int>(call.ldc);
  const float one = 1.0f, zero = 0.0f;
  const SgemmBatch sgemm_batch = g_sgemm_batch.load(std::memory_order_acquire);
  if (batched && batch > 1 && sgemm_batch != nullptr) {
    // mkl_gemm_batched: one group of |batch| products.
    const auto nb = static_cast<std::size_t>(batch);
    std::vector<const float*> a(nb), b(nb);
    std::vector<float*> c(nb);
    for (std::size_t i = 0; i < nb; ++i) {
      const auto bi = static_cast<std::int64_t>(i);
      a[i] = rhs + bi * k * n;
      b[i] = lhs + bi * m * k;
      c[i] = out + bi * m * n;
    }
    const int ta = call.transa == 'N' ? 111 : 112, tb = call.transb == 'N' ? 111 : 112;
    const int group = static_cast<int>(batch);
    sgemm_batch(102, &ta, &tb, &im, &in, &ik, &one, a.data(), &lda, b.data(), &ldb, &zero, c.data(),
                &ldc, 1, &group);
    return true;
  }
  call_sgemm(sgemm, call, batch, m, n, k, lhs, lhs_transposed, rhs, rhs_transposed, one, zero, out);
  return true;
}

bool mm_strided(std::int64_t m, std::int64_t n, std::int64_t k, const float* lhs,
                const std::int64_t lhs_strides[2], const float* rhs,
                const std::int64_t rhs_strides[2], float* out, const std::int64_t out_strides[2]) {
  const Sgemm sgemm = g_sgemm.load(std::memory_order_acquire);
  if (sgemm == nullptr) return false;
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) out[i * out_strides[0] + j * out_strides[1]] = 0.0f;
    return true;
  }
  const SgemmCall call = strided_sgemm_call(m, n, k, lhs_strides, rhs_strides, out_strides);
  if (!blas_accepts(call)) return false;
  // The operand ATen clones row-major dense first, gathered by its strides.
  std::vector<float> copy_a, copy_b;
  auto dense = [](const float* p, std::int64_t rows, std::int64_t cols, const std::int64_t* st,
                  std::vector<float>& buf) -> const float* {
    buf.resize(static_cast<std::size_t>(rows * cols));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) buf[i * cols + j] = p[i * st[0] + j * st[1]];
    return buf.data();
  };
  const float* a = call.a_is_lhs ? lhs : rhs;
  const float* b = call.a_is_lhs ? rhs : lhs;
  if (call.copy_a)
    a = call.a_is_lhs ? dense(lhs, m, k, lhs_strides, copy_a)
                      : dense(rhs, k, n, rhs_strides, copy_a);
  if (call.copy_b)
    b = call.a_is_lhs ? dense(rhs, k, n, rhs_strides, copy_b)
                      : dense(lhs, m, k, lhs_strides, copy_b);
  const int im = static_cast<int>(call.m), in = static_cast<int>(call.n),
            ik = static_cast<int>(call.k), lda = static_cast<int>(call.lda),
            ldb = static_cast<int>(call.ldb), ldc = static_cast<int>(call.ldc);
  const float one = 1.0f, zero = 0.0f;
  sgemm(&call.transa, &call.transb, &im, &in, &ik, &one, a, &lda, b, &ldb, &zero, out, &ldc);
  return true;
}

}  // namespace vtrn::runtime::aten_matmul
