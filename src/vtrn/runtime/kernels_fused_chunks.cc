// Where a fused loop's values lie in its scratch (FusedProgram::assign_chunks in
// executor_kernels.h): a chunk per value, shared by values never needed at the same time, so
// that a long loop's chunks stay in L1; and how long a chunk is (choose_chunk).
#include <algorithm>
#include <numeric>
#include <vector>

#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/kernels_fused_fold.h"
#include "vtrn/runtime/kernels_instr.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using Cls = FusedProgram::Cls;

namespace {
// A reduce folds chunks of kChunk elements, or of one ATen-order row (kMaxCascadeRow); its sums
// do not depend on the chunks. An elementwise loop's chunk is as long as keeps its scratch slots
// within kChunkScratchBytes (in L1 with the chunk's inputs and output), up to kMaxChunk: a
// chunk's fixed work (each load and instruction set up, the output's overlap check) cost a
// quarter of a float32 add at 1024 elements.
constexpr std::int64_t kChunk = 1024;
constexpr std::int64_t kMaxChunk = 8192;
constexpr std::int64_t kChunkScratchBytes = 16384;
// The longest row a cascade-sum reduce takes as one chunk (64 KiB of float32 per slot).
constexpr std::int64_t kMaxCascadeRow = 16384;
}  // namespace

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

void FusedProgram::choose_chunk() {
  chunk_ = kChunk;
  // A row summed in ATen's order is gathered whole before it is summed (AtenRowSum): a chunk
  // that holds whole rows is summed where it lies instead of copied piece by piece, which cost
  // three times the sum itself on 4096-element rows. The order does not depend on the chunks.
  if (reduce_ && reduce_layout_.trailing &&
      (reduce_layout_.cascade_sum || reduce_layout_.vec_sum) && reduce_layout_.red_n > kChunk &&
      reduce_layout_.red_n <= kMaxCascadeRow)
    chunk_ = reduce_layout_.red_n;
  // Bytes per element of the slots a chunk may write: all but loads read in place, a float32
  // root computed straight into the output and uniform values read as scalars.
  std::vector<char> in_place(slots_.size(), 0);
  for (const Load& l : loads_) {
    const Cls c = slots_[l.slot].cls;
    in_place[static_cast<std::size_t>(l.slot)] =
        l.mode == 0 && (reduce_ || l.slot != root_slot_) &&
        ((c == Cls::kF32 && l.dtype == DType::kF32) || (c == Cls::kF64 && l.dtype == DType::kF64) ||
         (c == Cls::kI64 && l.dtype == DType::kI64));
  }
  if (!reduce_ && out_dtype_ == DType::kF32 && slots_[root_slot_].cls == Cls::kF32 &&
      !instrs_.empty() && instrs_.back().dst == root_slot_) {
    in_place[static_cast<std::size_t>(root_slot_)] = 1;
    // A root picked by a select (a lerp's) is the operand picked, computed into the output
    // too; the other one is not computed.
    const Instr& last = instrs_.back();
    if (last.picks) {
      const InstrFolding folding(instrs_, slots_, root_slot_, extra_slots_);
      for (int o : {last.b, last.c})
        if (folding.readers(o) == 1 && slots_[o].dtype == DType::kF32)
          in_place[static_cast<std::size_t>(o)] = 1;
    }
  }
  // A uniform slot holds its one value, unless an instruction reads it per element (run_range
  // spreads it over the chunk): not as the scalar operand of takes_scalar() or of a folded
  // update, nor as a picking select's predicate.
  for (std::size_t k = 0; k < slots_.size(); ++k)
    if (slots_[k].uniform && static_cast<int>(k) != root_slot_) in_place[k] = 1;
  auto uniform = [&](int s) { return s >= 0 && slots_[static_cast<std::size_t>(s)].uniform; };
  for (const Instr& in : instrs_) {
    if (in.uniform || in.picks) continue;
    const bool scalar_side = takes_scalar(in) && !uniform(in.c) && uniform(in.a) != uniform(in.b);
    for (int o : in.operands()) {
      if (!uniform(o)) continue;
      const bool as_scalar =
          (in.update != Instr::Update::kNone && o == in.a) || (scalar_side && o != in.c);
      if (!as_scalar) in_place[static_cast<std::size_t>(o)] = 0;
    }
  }
  for (int e : extra_slots_) in_place[static_cast<std::size_t>(e)] = 0;
  std::vector<char> written(static_cast<std::size_t>(units_), 0);
  for (std::size_t k = 0; k < slots_.size(); ++k)
    if (!in_place[k] && slot_unit_[k] >= 0) {  // (a value folded away has no chunk)
      written[static_cast<std::size_t>(slot_unit_[k])] = 1;
      if (slots_[k].cls != Cls::kF32) written[static_cast<std::size_t>(slot_unit_[k]) + 1] = 1;
    }
  const std::int64_t bytes = 4 * std::count(written.begin(), written.end(), 1);
  if (!reduce_) {
    while (chunk_ < kMaxChunk && (chunk_ * 2) * bytes <= kChunkScratchBytes) chunk_ *= 2;
  } else if (reduce_layout_.trailing && reduce_layout_.red_n > 0 && reduce_layout_.red_n < kChunk) {
    // Rows shorter than a chunk: whole rows per chunk, as many as the scratch allows, so that a
    // RMSNorm's mean over rows of 256 is not a chunk's fixed work per 4 rows. A multiple of 32
    // elements too: a chunk's vector loops end where ATen's do (kernels_elementwise.h).
    const std::int64_t rows_and_vectors = std::lcm(reduce_layout_.red_n, std::int64_t{32});
    const std::int64_t fits =
        bytes > 0 ? std::min(kMaxChunk, kChunkScratchBytes / bytes) : kMaxChunk;
    if (fits / rows_and_vectors * rows_and_vectors >= kChunk)
      chunk_ = fits / rows_and_vectors * rows_and_vectors;
  }
}

}  // namespace vtrn::runtime::kernels
