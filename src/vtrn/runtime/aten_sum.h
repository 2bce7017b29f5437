// float32 sums in the orders ATen's CPU kernels take a contiguous row: torch.sum's
// (SumKernel.cpp's cascade_sum: vectorized_inner_sum, or for rows shorter than a vector row_sum
// over scalars) and softmax's (vec::reduce_all, below).
//
// A row of n elements is read as n / W vectors of W lanes (W = Vectorized<float>::size() of the
// kernel ATen dispatches to) and a scalar tail. The vectors go to 4
// accumulators in turn (vector i to accumulator i % 4), each summed through 4 levels that carry
// every 2^p additions into the next (p = max(4, ceil(log2(n / W / 4)) / 4)), the leftover
// vectors added to the first, the accumulators added in order; then the tail in order, from 0,
// and the W lanes added to it in order. Each lane adds in float32.
//
// torch.sum's W is 8 on every x86 CPU: SumKernel.cpp registers its kernel with
// REGISTER_DISPATCH, which torch's AVX-512 build leaves to the AVX2 kernel. Softmax's kernels are
// registered for AVX-512 too (ALSO_REGISTER_AVX512_DISPATCH): their W is 16 where torch's CPU
// capability is AVX512, which the torch layer sets (set_vector_lanes); without it W is 8. The
// activations' cpu_kernel_vec loops (sigmoid, silu, pow) are registered the same way, and step
// by two vectors of that W (kernels_elementwise.cc).
#pragma once

#include <cstdint>

namespace vtrn::runtime::aten_sum {

/// torch.sum's vector width.
constexpr int kSumLanes = 8;
/// multi_row_sum's levels and row_sum's partial sums (SumKernel.cpp's num_levels, ilp_factor).
constexpr int kLevels = 4;
constexpr int kIlp = 4;
/// multi_row_sum's level power for |rows| rows: every 2^p rows carry into the next level,
/// p = max(4, CeilLog2(rows) / 4).
int level_power(std::int64_t rows);

/// Sets the W of ATen's kernels registered for AVX-512 (reduce_all_row_sum's); 8 or 16 (anything
/// else is ignored).
void set_vector_lanes(int lanes);
int vector_lanes();

/// The sum of x[0, n) as ATen's sum of a contiguous float32 row (W = kSumLanes).
float row_sum(const float* x, std::int64_t n);

/// The sum of x[0, n) as ATen's vec::reduce_all adds it (functional_base.h), the row sums of
/// its softmax and log_softmax kernels over the last dim and of their backwards: the first W
/// elements start W lanes, each further whole vector is added lane by lane and the k tail
/// elements to the first k lanes; then lane l adds lane l + W/2, then l + W/4, ... down to
/// lane 0, the sum (vec_reduce_all's shuffles). A row shorter than W is added in order.
float reduce_all_row_sum(const float* x, std::int64_t n);

}  // namespace vtrn::runtime::aten_sum
