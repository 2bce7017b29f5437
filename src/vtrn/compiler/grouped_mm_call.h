// `custom_call @vtrn.grouped_mm`: torch._grouped_mm of float32 with offsets, as its CPU kernel
// computes it (GroupedMMUtils.h's _grouped_mm_fallback): one matrix product per group, each
// torch.mm of that group's slices, so the sums split as the CPU's BLAS splits them for that
// group's shape (one product over every group, then a selection, matched 15% of a Mixtral
// backward's elements once the contraction reached 252).
//
//   (a [M, K], b [G, K, N], offs [G] int32) -> out [M, N]      rows of a by group
//   (a [G, M, K], b [K, N], offs [G] int32) -> out [M, N]      columns of b by group
//   (a [M, K], b [K, N], offs [G] int32)    -> out [G, M, N]   the contraction by group
//
// No backend_config; the layout follows from the ranks. Group g covers [offs[g-1], offs[g])
// (from 0), each end wrapped (negative) and clamped into the dim as a slice does it. Rows or
// columns past the last group are 0 (the CPU leaves them uninitialized). The compiler prices a call
// as one matrix product over the elements (every row, column or contraction step belongs to one
// group).
#pragma once

#include <cstdint>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kGroupedMmTarget = "vtrn.grouped_mm";

enum class GroupedMmLayout { kRowsByGroup, kColumnsByGroup, kContractionByGroup };

struct GroupedMmShape {
  GroupedMmLayout layout = GroupedMmLayout::kRowsByGroup;
  std::int64_t groups = 0, m = 0, n = 0, k = 0;
};

/// Whether |op| is a call of the kernel.
bool is_grouped_mm_call(const hlo::Op& op);
/// The call's layout and sizes; throws hlo::Error naming what is wrong when its operands and
/// result do not fit one of the forms above.
GroupedMmShape grouped_mm_shape(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
