// Where a fused loop's values lie in its scratch (FusedProgram::assign_chunks in
// executor_kernels.h): a chunk per value, shared by values never needed at the same time, so
// that a long loop's chunks stay in L1.
#include <algorithm>
#include <vector>

#include "vtrn/runtime/executor_kernels.h"

namespace vtrn::runtime::kernels {

using Cls = FusedProgram::Cls;

void FusedProgram::assign_chunks() {
  const std::size_t ns = slots_.size();
  const auto n = static_cast<std::int64_t>(instrs_.size());
  // Loads, uniform values, the root and the extra outputs keep a chunk of their own: they are
  // set outside the instructions' order (loads and uniform values before the chunk's first
  // instruction, or once per run) or read after its last.
  std::vector<char> own(ns, 0);
  for (const Load& l : loads_) own[static_cast<std::size_t>(l.slot)] = 1;
  for (std::size_t s = 0; s < ns; ++s)
    if (slots_[s].uniform) own[s] = 1;
  own[static_cast<std::size_t>(root_slot_)] = 1;
  for (int e : extra_slots_) own[static_cast<std::size_t>(e)] = 1;
  // The last instruction that reads each slot (n: read after the last one).
  std::vector<std::int64_t> last(ns, -1);
  for (std::int64_t k = 0; k < n; ++k)
    for (int o : instrs_[k].operands())
      if (o >= 0) last[static_cast<std::size_t>(o)] = k;
  for (std::size_t s = 0; s < ns; ++s)
    if (own[s]) last[s] = n;
  // A picking select's result reads as the operand it picks, a multiply by a uniform 1 as its
  // other operand (run_range): that operand is read wherever the result is.
  auto extend = [&](int o, int dst) {
    last[static_cast<std::size_t>(o)] =
        std::max(last[static_cast<std::size_t>(o)], last[static_cast<std::size_t>(dst)]);
  };
  for (std::int64_t k = n; k-- > 0;) {
    const Instr& in = instrs_[static_cast<std::size_t>(k)];
    if (in.picks) {
      extend(in.b, in.dst);
      extend(in.c, in.dst);
    }
    if (in.scales) extend(slots_[static_cast<std::size_t>(in.a)].uniform ? in.b : in.a, in.dst);
  }
  auto width = [&](int s) { return slots_[static_cast<std::size_t>(s)].cls == Cls::kF32 ? 1 : 2; };
  slot_unit_.assign(ns, -1);
  units_ = 0;
  for (std::size_t s = 0; s < ns; ++s)
    if (own[s]) {
      slot_unit_[s] = units_;
      units_ += width(static_cast<int>(s));
    }
  // Free chunks by width. A result never shares a chunk with its own operands: the loops take
  // their pointers as __restrict.
  std::vector<std::int64_t> free_chunks[3];
  std::vector<char> freed(ns, 0);
  auto release = [&](int s) {
    const auto u = static_cast<std::size_t>(s);
    if (own[u] || freed[u] || slot_unit_[u] < 0) return;
    freed[u] = 1;
    free_chunks[width(s)].push_back(slot_unit_[u]);
  };
  for (std::int64_t k = 0; k < n; ++k) {
    const Instr& in = instrs_[static_cast<std::size_t>(k)];
    const auto d = static_cast<std::size_t>(in.dst);
    if (!own[d]) {
      std::vector<std::int64_t>& pool = free_chunks[width(in.dst)];
      if (pool.empty()) {
        slot_unit_[d] = units_;
        units_ += width(in.dst);
      } else {
        slot_unit_[d] = pool.back();
        pool.pop_back();
      }
    }
    for (int o : in.operands())
      if (o >= 0 && last[static_cast<std::size_t>(o)] <= k) release(o);
    if (last[d] <= k) release(in.dst);
  }
}

}  // namespace vtrn::runtime::kernels
