// Element copies between two strided views of the same shape, the executor's one loop for data
// movement (transpose, broadcast, slice, reverse, pad, dynamic slices and updates).
//
// Promises:
//  * dst[dst_base + sum_d idx[d] * dst_strides[d]] = src[src_base + sum_d idx[d] * src_strides[d]]
//    for every index of |shape|, elements of |elem_bytes| bytes. Strides are in elements and may
//    be zero (a broadcast) or negative (a reverse). The views must not overlap.
//  * The result does not depend on |threads|: large copies split their outer rows over the
//    thread budget, each element written once.
#pragma once

#include <cstdint>
#include <vector>

namespace vtrn::runtime {

struct StridedView {
  std::int64_t base = 0;
  std::vector<std::int64_t> strides;
};

void strided_copy(std::uint8_t* dst, const StridedView& dst_view, const std::uint8_t* src,
                  const StridedView& src_view, const std::vector<std::int64_t>& shape,
                  int elem_bytes, int threads = 1);

/// dst[0 .. n) = |value| (one element of |elem_bytes| bytes), n elements.
void fill_elements(std::uint8_t* dst, const std::uint8_t* value, std::int64_t n, int elem_bytes);

}  // namespace vtrn::runtime
