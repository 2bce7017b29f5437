// The executor's `custom_call @vtrn.grouped_mm` (compiler/grouped_mm_call.h): per group, the
// torch.mm of that group's slices. With ATen's sgemm installed (runtime/aten_matmul.h) each is
// ATen's call of it, so the result is the CPU's bits; without it (the C++ tests, `vtrn hlo
// --run`) each element sums in float64, which agrees within rounding.
#pragma once

#include <cstdint>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::grouped_mm {

/// Group g's range [begin, end) of a dim of |size| elements, as the CPU's loop slices it: from
/// the previous group's end (0 for the first) to offs[g], a negative one counted from the back
/// (size added), each then clamped into [0, size] and the end to at least the begin.
struct Range {
  std::int64_t begin = 0, end = 0;
};
Range group_range(const std::int32_t* offs, std::int64_t g, std::int64_t size);

/// The custom call's kernel.
void call(const CustomCallArgs& args);

}  // namespace vtrn::runtime::grouped_mm
