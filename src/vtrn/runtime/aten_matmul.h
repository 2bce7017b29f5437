// float32 matrix products as ATen's CPU kernels compute torch.mm and torch.bmm, bit for bit.
//
// ATen's mm calls BLAS's sgemm (MKL's, linked into libtorch_cpu) with transposes and leading
// dimensions it derives from the operands' strides (addmm_impl_cpu_, then cpublas::gemm's
// normalize_last_dims); its bmm calls MKL's batched sgemm with arguments derived another way
// (baddbmm_with_gemm_; sgemm itself for one batch), except that products of under 400
// multiply-adds (k * m * n) take a plain loop that adds each product in turn. Another library,
// or the same one called another way, orders the additions otherwise. The runtime has no BLAS
// that matches: the torch layer installs libtorch's functions here, and without them matmul
// returns false and the executor keeps its own kernels.
#pragma once

#include <cstdint>

namespace vtrn::runtime::aten_matmul {

/// BLAS's Fortran sgemm (column-major): c = alpha * op(a) * op(b) + beta * c.
using Sgemm = void (*)(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c, const int* ldc);
/// MKL's cblas_sgemm_batch (LP64), which ATen's mkl_gemm_batched calls with one group. The
/// CBLAS enums are ints: CblasColMajor 102, CblasNoTrans 111, CblasTrans 112.
using SgemmBatch = void (*)(int layout, const int* transa, const int* transb, const int* m,
                            const int* n, const int* k, const float* alpha, const float** a,
                            const int* lda, const float** b, const int* ldb, const float* beta,
                            float** c, const int* ldc, int group_count, const int* group_size);

/// Installs |sgemm| and |batch| (nullptr uninstalls). Safe against concurrent calls of
/// matmul. Without |batch|, bmm calls sgemm per batch with the same arguments.
void install(Sgemm sgemm, SgemmBatch batch = nullptr);
bool installed();

/// The arguments ATen passes to sgemm for one row-major result [m, n] = lhs [m, k] x rhs [k, n],
/// lhs stored dense [m, k] (or [k, m] when |lhs_transposed|), rhs dense [k, n] (or [n, k]).
struct SgemmCall {
  char transa = 'N', transb = 'N';
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  bool a_is_lhs = true;                 ///< sgemm's a is the lhs (else the rhs: ATen swapped them)
  bool copy_a = false, copy_b = false;  ///< ATen first copies that operand row-major dense
};
/// torch.mm's call (addmm_impl_cpu_).
SgemmCall aten_sgemm_call(std::int64_t m, std::int64_t n, std::int64_t k, bool lhs_transposed,
                          bool rhs_transposed);
/// addmm_impl_cpu_'s call for a result [m, n] = lhs [m, k] x rhs [k, n], each given by its
/// element strides (row, column): a result that is a slice of a larger one (mm_out into it).
SgemmCall strided_sgemm_call(std::int64_t m, std::int64_t n, std::int64_t k,
                             const std::int64_t lhs_strides[2], const std::int64_t rhs_strides[2],
                             const std::int64_t out_strides[2]);
/// torch.bmm's call per batch for products of 400 multiply-adds or more (baddbmm_with_gemm_):
/// the rhs is always sgemm's a, and nothing is copied.
SgemmCall aten_bmm_call(std::int64_t m, std::int64_t n, std::int64_t k, bool lhs_transposed,
                        bool rhs_transposed);

/// out[b] = lhs[b] x rhs[b] for b < batch (out dense [batch, m, n]) as ATen computes
/// torch.mm (|batched| false, batch 1) or torch.bmm (|batched| true). False when no sgemm is
/// installed or ATen would not call BLAS (a dimension beyond 32 bits); |out| is then untouched.
bool matmul(bool batched, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
            const float* lhs, bool lhs_transposed, const float* rhs, bool rhs_transposed,
            float* out);

/// torch.mm_out's out [m, n] = lhs x rhs for operands and a result laid out by their element
/// strides (_grouped_mm's CPU loop multiplies slices so): one sgemm call with ATen's arguments,
/// an operand that fits neither layout first copied row-major dense as ATen clones it; k == 0
/// gives zeros. False, |out| untouched, when no sgemm is installed or ATen would not call BLAS.
/// The result must be row- or column-major with a leading stride (as a slice's is).
bool mm_strided(std::int64_t m, std::int64_t n, std::int64_t k, const float* lhs,
                const std::int64_t lhs_strides[2], const float* rhs,
                const std::int64_t rhs_strides[2], float* out, const std::int64_t out_strides[2]);

/// torch.addmm's out [m, n] = alpha * lhs x rhs + beta * out as ATen computes it for float32:
/// |out| holds `self` expanded on entry unless |beta| is 0 (then it is not read); one sgemm
/// call with ATen's arguments, alpha and beta (addmm_impl_cpu_), or for k == 0 out * beta (0
/// when beta is 0). False, |out| untouched, when no sgemm is installed or ATen would not call
/// BLAS.
bool addmm(std::int64_t m, std::int64_t n, std::int64_t k, const float* lhs, bool lhs_transposed,
           const float* rhs, bool rhs_transposed, float alpha, float beta, float* out);

}  // namespace vtrn::runtime::aten_matmul
