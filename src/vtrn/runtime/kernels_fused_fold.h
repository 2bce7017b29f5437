// What folding a fused loop's instructions into one needs to know about them
// (FusedProgram::fold_logistic, fold_update): who reads each slot, which instruction computes
// it, and whether the value is needed after the loop.
#pragma once

#include <vector>

#include "vtrn/runtime/executor_kernels.h"

namespace vtrn::runtime::kernels {

class InstrFolding {
 public:
  using Instr = FusedProgram::Instr;
  using Slot = FusedProgram::Slot;

  InstrFolding(std::vector<Instr>& instrs, const std::vector<Slot>& slots, int root,
               const std::vector<int>& extras)
      : instrs_(instrs), slots_(slots), outside_(slots.size(), 0) {
    outside_[static_cast<std::size_t>(root)] = 1;
    for (int e : extras) outside_[static_cast<std::size_t>(e)] = 1;
    index();
  }

  /// Counts each slot's readers and finds its producer again (after instructions changed).
  void index() {
    readers_.assign(slots_.size(), 0);
    producer_.assign(slots_.size(), -1);
    for (std::size_t k = 0; k < instrs_.size(); ++k) {
      for (int o : instrs_[k].operands())
        if (o >= 0) ++readers_[static_cast<std::size_t>(o)];
      producer_[static_cast<std::size_t>(instrs_[k].dst)] = static_cast<int>(k);
    }
    folded_.assign(instrs_.size(), 0);
  }
  int readers(int s) const { return readers_[static_cast<std::size_t>(s)]; }
  /// A float32 value computed per element (not rounded to a narrower type on the way).
  bool f32(int s) const {
    const Slot& slot = slots_[static_cast<std::size_t>(s)];
    return slot.cls == FusedProgram::Cls::kF32 && slot.dtype == hlo::DType::kF32 && !slot.uniform;
  }
  /// The plain float32 instruction of |kind| computing |s| when |uses| operands read it, all
  /// inside the loop, or nullptr (a folded update never qualifies; a folded logistic does).
  /// |scaling|: a multiply marked Instr::scales qualifies too.
  Instr* only_from(int s, hlo::OpKind kind, int uses = 1, bool scaling = false) {
    if (s < 0) return nullptr;
    const auto u = static_cast<std::size_t>(s);
    if (readers_[u] != uses || outside_[u] || producer_[u] < 0 || !f32(s)) return nullptr;
    Instr& in = instrs_[static_cast<std::size_t>(producer_[u])];
    const bool plain = !in.picks && (scaling || !in.scales) && in.update == Instr::Update::kNone;
    return in.kind == kind && in.in_dtype == hlo::DType::kF32 && plain ? &in : nullptr;
  }
  /// Marks |gone| for drop_folded.
  void fold(const Instr* gone) { folded_[static_cast<std::size_t>(gone - instrs_.data())] = 1; }
  /// Removes the instructions marked by fold.
  void drop_folded() {
    std::size_t kept = 0;
    for (std::size_t k = 0; k < instrs_.size(); ++k)
      if (!folded_[k]) instrs_[kept++] = instrs_[k];
    instrs_.resize(kept);
    index();
  }

 private:
  std::vector<Instr>& instrs_;
  const std::vector<Slot>& slots_;
  std::vector<char> outside_;
  std::vector<int> readers_, producer_;
  std::vector<char> folded_;
};

}  // namespace vtrn::runtime::kernels
