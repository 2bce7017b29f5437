// Sigmoid and silu as one instruction of a fused loop (FusedProgram::fold_logistic in
// executor_kernels.h). The lowerings write them as ATen's vectorized kernels compute them:
// negate, exponential, add 1, divide. Run one by one, those are four passes over a chunk, and
// the one that reads the input from memory cannot overlap the exponential's arithmetic; silu's
// forward took twice the CPU's time and its backward three times. Folded, the same operations
// run in turn on each vector, so every element keeps its bits.
#include <algorithm>
#include <vector>

#include "vtrn/runtime/executor_kernels.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using hlo::OpKind;
using Cls = FusedProgram::Cls;

void FusedProgram::fold_logistic() {
  const std::size_t ns = slots_.size();
  // Per slot: how many operands read it, the instruction computing it, whether it is needed
  // after the loop, whether it is the constant 1.
  std::vector<int> readers(ns, 0), producer(ns, -1);
  std::vector<char> outside(ns, 0), one(ns, 0);
  for (std::size_t k = 0; k < instrs_.size(); ++k) {
    const Instr& in = instrs_[k];
    for (int o : {in.a, in.b, in.c})
      if (o >= 0) ++readers[static_cast<std::size_t>(o)];
    producer[static_cast<std::size_t>(in.dst)] = static_cast<int>(k);
  }
  outside[static_cast<std::size_t>(root_slot_)] = 1;
  for (int e : extra_slots_) outside[static_cast<std::size_t>(e)] = 1;
  for (const Load& l : loads_)
    if (l.mode == 3 && slots_[l.slot].cls == Cls::kF32 && l.cd == 1.0)
      one[static_cast<std::size_t>(l.slot)] = 1;
  // A float32 value computed per element (not rounded to a narrower type on the way).
  auto f32 = [&](int s) {
    const Slot& slot = slots_[static_cast<std::size_t>(s)];
    return slot.cls == Cls::kF32 && slot.dtype == DType::kF32 && !slot.uniform;
  };
  // The instruction of |kind| computing |s| when only one operand reads it, inside the loop.
  auto only_from = [&](int s, OpKind kind) -> Instr* {
    if (s < 0) return nullptr;
    const auto u = static_cast<std::size_t>(s);
    if (readers[u] != 1 || outside[u] || producer[u] < 0 || !f32(s)) return nullptr;
    Instr& in = instrs_[static_cast<std::size_t>(producer[u])];
    return in.kind == kind && in.in_dtype == DType::kF32 ? &in : nullptr;
  };
  std::vector<char> folded(instrs_.size(), 0);
  for (Instr& div : instrs_) {
    if (div.kind != OpKind::kDivide || div.c >= 0 || div.in_dtype != DType::kF32 || !f32(div.dst))
      continue;
    Instr* add = only_from(div.b, OpKind::kAdd);
    if (add == nullptr || add->c >= 0) continue;
    Instr* exp = only_from(one[static_cast<std::size_t>(add->a)]   ? add->b
                           : one[static_cast<std::size_t>(add->b)] ? add->a
                                                                   : -1,
                           OpKind::kExp);
    if (exp == nullptr || exp->vml) continue;
    Instr* neg = only_from(exp->a, OpKind::kNegate);
    if (neg == nullptr || !f32(neg->a)) continue;
    const int x = neg->a;
    const bool silu = div.a == x;
    if (!silu && !one[static_cast<std::size_t>(div.a)]) continue;
    for (const Instr* gone : {add, exp, neg})
      folded[static_cast<std::size_t>(gone - instrs_.data())] = 1;
    div.logistic = silu ? Instr::Logistic::kSilu : Instr::Logistic::kSigmoid;
    div.sleef = exp->sleef;
    div.a = x;
    div.b = -1;
  }
  std::size_t kept = 0;
  for (std::size_t k = 0; k < instrs_.size(); ++k)
    if (!folded[k]) instrs_[kept++] = instrs_[k];
  instrs_.resize(kept);
}

}  // namespace vtrn::runtime::kernels
