// Sigmoid, silu and silu's gradient as one instruction of a fused loop
// (FusedProgram::fold_logistic in executor_kernels.h). The lowerings write them as ATen's
// vectorized kernels compute them: negate, exponential, add 1, divide; the gradient then takes
// 1 - s, x * (1 - s) + 1 in one rounding, g * s and the product. Run one by one, those are a pass
// over a chunk each, and the pass that reads an input from memory cannot overlap the
// exponential's arithmetic: silu's forward took twice the CPU's time and its backward three
// times. Folded, the same operations run in turn on each vector, so every element keeps its bits.
#include <vector>

#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/kernels_fused_fold.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using hlo::OpKind;
using Cls = FusedProgram::Cls;

void FusedProgram::fold_logistic() {
  InstrFolding f(instrs_, slots_, root_slot_, extra_slots_);
  // Per slot: whether it is the constant 1.
  std::vector<char> one(slots_.size(), 0);
  for (const Load& l : loads_)
    if (l.mode == 3 && slots_[l.slot].cls == Cls::kF32 && l.cd == 1.0)
      one[static_cast<std::size_t>(l.slot)] = 1;
  auto is_one = [&](int s) { return s >= 0 && one[static_cast<std::size_t>(s)]; };

  // Sigmoid and silu: div(1 or x, add(1, exp(neg(x)))).
  for (Instr& div : instrs_) {
    if (div.kind != OpKind::kDivide || div.c >= 0 || div.in_dtype != DType::kF32 || !f.f32(div.dst))
      continue;
    Instr* add = f.only_from(div.b, OpKind::kAdd);
    if (add == nullptr || add->c >= 0) continue;
    Instr* exp = f.only_from(is_one(add->a) ? add->b : is_one(add->b) ? add->a : -1, OpKind::kExp);
    if (exp == nullptr || exp->vml) continue;
    Instr* neg = f.only_from(exp->a, OpKind::kNegate);
    if (neg == nullptr || !f.f32(neg->a)) continue;
    const int x = neg->a;
    const bool silu = div.a == x;
    if (!silu && !is_one(div.a)) continue;
    for (const Instr* gone : {add, exp, neg}) f.fold(gone);
    div.logistic = silu ? Instr::Logistic::kSilu : Instr::Logistic::kSigmoid;
    div.sleef = exp->sleef;
    div.a = x;
    div.b = -1;
  }
  f.drop_folded();

  // silu's gradient: mul(mul(g, s), fma(x, sub(1, s), 1)) with s the sigmoid of x, read by
  // those two alone.
  for (Instr& r : instrs_) {
    if (r.kind != OpKind::kMultiply || r.c >= 0 || r.in_dtype != DType::kF32 || !f.f32(r.dst) ||
        r.picks || r.scales || r.logistic != Instr::Logistic::kNone)
      continue;
    for (const auto [p, q] : {std::pair{r.a, r.b}, std::pair{r.b, r.a}}) {
      Instr* gs = f.only_from(p, OpKind::kMultiply);
      Instr* fm = f.only_from(q, OpKind::kFma);
      if (gs == nullptr || fm == nullptr || !is_one(fm->c)) continue;
      Instr* u = f.only_from(fm->b, OpKind::kSubtract);
      if (u == nullptr || !is_one(u->a)) continue;
      Instr* sig = f.only_from(u->b, OpKind::kDivide, 2);
      if (sig == nullptr || sig->logistic != Instr::Logistic::kSigmoid || sig->a != fm->a) continue;
      const int g = gs->a == u->b ? gs->b : gs->b == u->b ? gs->a : -1;
      if (g < 0 || !f.f32(g)) continue;
      for (const Instr* gone : {gs, fm, u, sig}) f.fold(gone);
      r.logistic = Instr::Logistic::kSiluBackward;
      r.sleef = sig->sleef;
      r.a = g;
      r.b = sig->a;
      break;
    }
  }
  f.drop_folded();
}

}  // namespace vtrn::runtime::kernels
