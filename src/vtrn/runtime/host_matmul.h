// Batched matrix products on the host CPU, through oneDNN's matmul primitive: the library ATen's
// own CPU kernels use for bf16 matmuls. It picks AVX-512 / AVX512-BF16 / AMX kernels where the
// CPU has them, so a bf16 product runs on bf16 hardware instead of being widened to float32.
//
// Accumulation is always float32 (as on the Tensor engine, whose PSUM accumulates in fp32):
// bf16 products are exact in float32, so bf16 inputs give the float32 path's result up to the
// order of the additions.
#pragma once

#include <cstdint>

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
};

/// out[b] = lhs[b] x rhs[b] for every b < batch, in float32, out dense [batch, m, n]. lhs and rhs
/// are dense in the layouts |shape| names, of |shape.input|'s element type. k == 0 gives zeros.
/// Thread-safe; each calling thread keeps its own compiled primitives, per shape.
void host_matmul(const MatmulShape& shape, const void* lhs, const void* rhs, float* out);

/// Primitives the calling thread has compiled so far (each distinct shape once).
std::int64_t host_matmul_primitives_compiled();

}  // namespace vtrn::runtime
