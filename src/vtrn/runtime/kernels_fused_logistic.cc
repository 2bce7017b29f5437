// Sigmoid, silu and silu's gradient as one instruction of a fused loop
// (FusedProgram::fold_logistic in executor_kernels.h). The lowerings write them as ATen's
// vectorized kernels compute them: negate, exponential, add 1, divide; the gradient then takes
// 1 - s, x * (1 - s) + 1 in one rounding, g * s and the product. Run one by one, those are a pass
// over a chunk each, and the pass that reads an input from memory cannot overlap the
// exponential's arithmetic: silu's forward took twice the CPU's time and its backward three
// times. Folded, the same operations run in turn on each vector, so every element keeps its bits.
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
  std::vector<int> readers(ns), producer(ns);
  std::vector<char> outside(ns, 0), one(ns, 0);
  outside[static_cast<std::size_t>(root_slot_)] = 1;
  for (int e : extra_slots_) outside[static_cast<std::size_t>(e)] = 1;
  for (const Load& l : loads_)
    if (l.mode == 3 && slots_[l.slot].cls == Cls::kF32 && l.cd == 1.0)
      one[static_cast<std::size_t>(l.slot)] = 1;
  std::vector<char> folded;
  auto index = [&] {
    readers.assign(ns, 0);
    producer.assign(ns, -1);
    for (std::size_t k = 0; k < instrs_.size(); ++k) {
      const Instr& in = instrs_[k];
      for (int o : {in.a, in.b, in.c})
        if (o >= 0) ++readers[static_cast<std::size_t>(o)];
      producer[static_cast<std::size_t>(in.dst)] = static_cast<int>(k);
    }
    folded.assign(instrs_.size(), 0);
  };
  auto drop_folded = [&] {
    std::size_t kept = 0;
    for (std::size_t k = 0; k < instrs_.size(); ++k)
      if (!folded[k]) instrs_[kept++] = instrs_[k];
    instrs_.resize(kept);
  };
  auto is_one = [&](int s) { return s >= 0 && one[static_cast<std::size_t>(s)]; };
  // A float32 value computed per element (not rounded to a narrower type on the way).
  auto f32 = [&](int s) {
    const Slot& slot = slots_[static_cast<std::size_t>(s)];
    return slot.cls == Cls::kF32 && slot.dtype == DType::kF32 && !slot.uniform;
  };
  // The plain float32 instruction of |kind| computing |s| when |uses| operands read it, all
  // inside the loop.
  auto only_from = [&](int s, OpKind kind, int uses = 1) -> Instr* {
    if (s < 0) return nullptr;
    const auto u = static_cast<std::size_t>(s);
    if (readers[u] != uses || outside[u] || producer[u] < 0 || !f32(s)) return nullptr;
    Instr& in = instrs_[static_cast<std::size_t>(producer[u])];
    return in.kind == kind && in.in_dtype == DType::kF32 && !in.picks && !in.scales ? &in : nullptr;
  };
  auto fold = [&](const Instr* gone) {
    folded[static_cast<std::size_t>(gone - instrs_.data())] = 1;
  };

  // Sigmoid and silu: div(1 or x, add(1, exp(neg(x)))).
  index();
  for (Instr& div : instrs_) {
    if (div.kind != OpKind::kDivide || div.c >= 0 || div.in_dtype != DType::kF32 || !f32(div.dst))
      continue;
    Instr* add = only_from(div.b, OpKind::kAdd);
    if (add == nullptr || add->c >= 0) continue;
    Instr* exp = only_from(is_one(add->a) ? add->b : is_one(add->b) ? add->a : -1, OpKind::kExp);
    if (exp == nullptr || exp->vml) continue;
    Instr* neg = only_from(exp->a, OpKind::kNegate);
    if (neg == nullptr || !f32(neg->a)) continue;
    const int x = neg->a;
    const bool silu = div.a == x;
    if (!silu && !is_one(div.a)) continue;
    for (const Instr* gone : {add, exp, neg}) fold(gone);
    div.logistic = silu ? Instr::Logistic::kSilu : Instr::Logistic::kSigmoid;
    div.sleef = exp->sleef;
    div.a = x;
    div.b = -1;
  }
  drop_folded();

  // silu's gradient: mul(mul(g, s), fma(x, sub(1, s), 1)) with s the sigmoid of x, read by
  // those two alone.
  index();
  for (Instr& r : instrs_) {
    if (r.kind != OpKind::kMultiply || r.c >= 0 || r.in_dtype != DType::kF32 || !f32(r.dst) ||
        r.picks || r.scales || r.logistic != Instr::Logistic::kNone)
      continue;
    for (const auto [p, q] : {std::pair{r.a, r.b}, std::pair{r.b, r.a}}) {
      Instr* gs = only_from(p, OpKind::kMultiply);
      Instr* f = only_from(q, OpKind::kFma);
      if (gs == nullptr || f == nullptr || !is_one(f->c)) continue;
      Instr* u = only_from(f->b, OpKind::kSubtract);
      if (u == nullptr || !is_one(u->a)) continue;
      Instr* sig = only_from(u->b, OpKind::kDivide, 2);
      if (sig == nullptr || sig->logistic != Instr::Logistic::kSigmoid || sig->a != f->a) continue;
      const int g = gs->a == u->b ? gs->b : gs->b == u->b ? gs->a : -1;
      if (g < 0 || !f32(g)) continue;
      for (const Instr* gone : {gs, f, u, sig}) fold(gone);
      r.logistic = Instr::Logistic::kSiluBackward;
      r.sleef = sig->sleef;
      r.a = g;
      r.b = sig->a;
      break;
    }
  }
  drop_folded();
}

}  // namespace vtrn::runtime::kernels
