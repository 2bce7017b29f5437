// Batched matrix products on the host CPU, through oneDNN's matmul primitive: the library ATen's
// own CPU kernels use for bf16 matmuls. It picks AVX-512 / AVX512-BF16 / AMX kernels where the
// CPU has them, so a bf16 product runs on bf16 hardware instead of being widened to float32.
// Where oneDNN has no bf16 kernel for the CPU (below AVX-512), bf16 operands are widened to
// float32 first, as ATen's own fallback does. There, large single float32 products run on
// OpenBLAS's sgemm, which is faster than oneDNN's AVX2 GEMM for them (host_matmul.cc).
//
// Accumulation is always float32 (as on the Tensor engine, whose PSUM accumulates in fp32):
// bf16 products are exact in float32, so bf16 inputs give the float32 path's result up to the
// order of the additions.
#pragma once

#include <cstdint>
#include <vector>

namespace vtrn::runtime {

enum class MatmulInput { kF32, kBF16 };

struct MatmulShape {
  std::int64_t batch = 1;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  // lhs is stored [batch, k, m] instead of [batch, m, k]; rhs [batch, n, k] instead of
  // [batch, k, n]. Attention's q k^T and its backward's p^T dO come this way.
  bool lhs_transposed = false;
  bool rhs_transposed = false;
  MatmulInput input = MatmulInput::kF32;
  // Operands read in place through strides instead (a dot over a permuted view: attention's
  // p x v with v stored [b, s, h, d]). When set, |batch_dims| replaces |batch| (their product is
  // the batch), and each operand has one stride in elements per dim of [batch_dims..., m, k]
  // (lhs) or [batch_dims..., k, n] (rhs); the flags are ignored.
  std::vector<std::int64_t> batch_dims;
  std::vector<std::int64_t> lhs_strides, rhs_strides;
  // With |batch_dims|: the output's stride in elements per dim of [batch_dims..., m, n] (rows
  // of a larger matrix: attention writes a tile of query rows in place); empty: dense.
  std::vector<std::int64_t> out_strides;
};

/// out[b] = lhs[b] x rhs[b] for every b < batch, in float32, out dense [batch, m, n] (or through
/// |shape.out_strides|). lhs and rhs
/// are dense in the layouts |shape| names, of |shape.input|'s element type. k == 0 gives zeros.
/// Thread-safe; each calling thread keeps its own compiled primitives, per shape.
void host_matmul(const MatmulShape& shape, const void* lhs, const void* rhs, float* out);

/// Whether host_matmul runs |shape|'s strided operands (see MatmulShape) with one of oneDNN's
/// optimized kernels: some strides only reach its reference loops, slower than copying the
/// operand dense first. Compiles (and keeps) the primitive.
bool host_matmul_strides_fast(const MatmulShape& shape);

/// Primitives the calling thread has compiled so far (each distinct shape once).
std::int64_t host_matmul_primitives_compiled();

}  // namespace vtrn::runtime
