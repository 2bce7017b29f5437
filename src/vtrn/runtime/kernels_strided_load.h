// Internal to the executor: a fused loop's strided (broadcast, or strided view) loads of a run
// of elements into a chunk (FusedProgram::run_range, kernels_fused.cc).
#pragma once

#include <cstdint>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "vtrn/hlo/ir.h"
#include "vtrn/runtime/executor_kernels.h"

namespace vtrn::runtime::kernels {

// to[j] = from[2 j] for j < n: every other float (the halves of a rotary embedding), four at
// a time where SSE2 is there: two loads and a shuffle ran 2.6-4x faster than the element loop.
// The second load starts at element 2j + 3, so nothing past the last element read is touched.
inline void load_every_other(const float* __restrict from, float* __restrict to, std::int64_t n) {
  std::int64_t j = 0;
#if defined(__SSE2__)
  for (; j + 4 <= n; j += 4) {
    const __m128 a = _mm_loadu_ps(from + 2 * j), c = _mm_loadu_ps(from + 2 * j + 3);
    _mm_storeu_ps(to + j, _mm_shuffle_ps(a, c, _MM_SHUFFLE(3, 1, 2, 0)));
  }
#endif
  for (; j < n; ++j) to[j] = from[2 * j];
}

// dst[at + j] = element off + j * stride of |p| (of dtype |d|), in the loop class |c|, for j <
// n: a broadcast operand's run along the domain's last dim. Whole runs, not single elements,
// are dispatched on the dtype: a per-element switch cost more than the arithmetic it fed.
void load_run(hlo::DType d, FusedProgram::Cls c, const std::uint8_t* p, std::int64_t off,
              std::int64_t stride, std::int64_t n, void* dst, std::int64_t at);

}  // namespace vtrn::runtime::kernels
