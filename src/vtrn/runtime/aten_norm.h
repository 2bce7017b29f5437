// The sums of ATen's CPU vector norms (compiler/aten_norm.h has the orders), one row at a time.
// Each returns the float32 accumulator: the square root for order 2 is taken, the rounding to
// bfloat16 is the caller's.
#pragma once

#include <cstdint>

namespace vtrn::runtime::aten_norm {

/// The norm_cpu kernel's float lanes (Vectorized<float>::size() of its AVX2 kernel, the one
/// torch's x86 builds run: the kernel is not registered for AVX-512).
constexpr int kLanes = 8;
/// The compiled tail loop's groups: products of 4 tail elements rounded before their adds.
constexpr int kTailGroup = 4;

/// sqrt of the sum of x[i]^2 in the last-dim fast path's order.
float norm2_vectorized(const float* x, std::int64_t n);
/// The same over bfloat16 bits, 2 * kLanes elements a step.
float norm2_vectorized(const std::uint16_t* x, std::int64_t n);

/// The scalar loop: acc + x[i] * x[i] (order 2, then the square root) or acc + |x[i]| (order
/// 1), i from 0.
float norm_in_order(const float* x, std::int64_t n, int ord);
float norm_in_order(const std::uint16_t* x, std::int64_t n, int ord);

}  // namespace vtrn::runtime::aten_norm
