#include "vtrn/compiler/grouped_mm_call.h"

#include <string>

#include "vtrn/compiler/backend_config.h"

namespace vtrn::compiler {

bool is_grouped_mm_call(const hlo::Op& op) {
  return op.kind == hlo::OpKind::kCustomCall && op.call_target_name == kGroupedMmTarget;
}

GroupedMmShape grouped_mm_shape(const hlo::Block& b, const hlo::Op& op) {
  using hlo::DType;
  using hlo::TensorType;
  GroupedMmShape s;
  bool ok = op.operands.size() == 3 && op.results.size() == 1 && op.backend_config.empty();
  if (ok) {
    const TensorType &a = b.type(op.operands[0]), &w = b.type(op.operands[1]),
                     &offs = b.type(op.operands[2]), &out = b.type(op.results[0]);
    ok = a.dtype == DType::kF32 && w.dtype == DType::kF32 && out.dtype == DType::kF32 &&
         offs.dtype == DType::kI32 && offs.rank() == 1;
    s.groups = ok ? offs.dims[0] : 0;
    if (ok && a.rank() == 2 && w.rank() == 3) {
      s.layout = GroupedMmLayout::kRowsByGroup;
      s.m = a.dims[0], s.k = a.dims[1], s.n = w.dims[2];
      ok = w.dims[0] == s.groups && w.dims[1] == s.k && out == TensorType(DType::kF32, {s.m, s.n});
    } else if (ok && a.rank() == 3 && w.rank() == 2) {
      s.layout = GroupedMmLayout::kColumnsByGroup;
      s.m = a.dims[1], s.k = a.dims[2], s.n = w.dims[1];
      ok = a.dims[0] == s.groups && w.dims[0] == s.k && out == TensorType(DType::kF32, {s.m, s.n});
    } else if (ok && a.rank() == 2 && w.rank() == 2) {
      s.layout = GroupedMmLayout::kContractionByGroup;
      s.m = a.dims[0], s.k = a.dims[1], s.n = w.dims[1];
      ok = w.dims[0] == s.k && out == TensorType(DType::kF32, {s.groups, s.m, s.n});
    } else {
      ok = false;
    }
  }
  if (!ok)
    throw hlo::Error("custom_call @" + std::string(kGroupedMmTarget) +
                     " takes float32 (a [M, K], b [G, K, N]) -> [M, N], (a [G, M, K], b [K, N]) "
                     "-> [M, N] or (a [M, K], b [K, N]) -> [G, M, N], with int32 offs [G] and no "
                     "backend_config; got " +
                     call_types(b, op));
  return s;
}

}  // namespace vtrn::compiler
