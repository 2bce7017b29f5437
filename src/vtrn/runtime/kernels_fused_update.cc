// The optimizers' updates as one instruction of a fused loop (FusedProgram::fold_update in
// executor_kernels.h). Adam's _foreach_addcmul_, _foreach_addcdiv_ and _foreach_lerp_ are two
// or three instructions each, each a pass over a chunk through scratch: the passes that read a
// parameter list from memory stall on it, and the three took 2-3x the CPU's time (a two-pass
// lerp_ over 1M floats, 2.2x), where ATen reads each element once. Folded, the same
// operations run in turn on each vector, each rounded as before, so every element keeps its
// bits.
#include <vector>

#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/kernels_fused_fold.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using hlo::OpKind;
using Cls = FusedProgram::Cls;
using Update = FusedProgram::Instr::Update;

void FusedProgram::fold_update() {
  InstrFolding f(instrs_, slots_, root_slot_, extra_slots_);
  auto uniform_f32 = [&](int s) {
    return s >= 0 && slots_[static_cast<std::size_t>(s)].uniform &&
           slots_[static_cast<std::size_t>(s)].cls == Cls::kF32;
  };
  // Read per element as floats (any dtype the loop holds as float32).
  auto floats = [&](int s) {
    return s >= 0 && slots_[static_cast<std::size_t>(s)].cls == Cls::kF32;
  };
  // The instruction a fold rewrites: plain, float32 in, float32 class out (rounded to its dtype
  // after, as before).
  auto plain = [&](const Instr& in, OpKind kind) {
    return in.kind == kind && in.in_dtype == DType::kF32 && !in.uniform && !in.picks &&
           !in.scales && !in.vml && !in.sleef && in.logistic == Instr::Logistic::kNone &&
           in.update == Update::kNone && slots_[static_cast<std::size_t>(in.dst)].cls == Cls::kF32;
  };
  // mul(s, x): a uniform scalar times a value per element, the scalar on the left as the
  // lowerings write it (so that a NaN keeps the same payload).
  auto scaled = [&](int v) -> Instr* {
    Instr* m = f.only_from(v, OpKind::kMultiply, 1, /*scaling=*/true);
    return m != nullptr && m->c < 0 && uniform_f32(m->a) && floats(m->b) ? m : nullptr;
  };

  // addcmul: fma(mul(s, x), y, z).
  for (Instr& r : instrs_) {
    if (!plain(r, OpKind::kFma) || !floats(r.b) || !floats(r.c)) continue;
    Instr* m = scaled(r.a);
    if (m == nullptr) continue;
    f.fold(m);
    r = Instr{r.kind, r.dst, m->a, m->b, r.b, r.c, r.cmp, r.in_dtype};
    r.update = Update::kFmaScaled;
  }
  f.drop_folded();

  // addcdiv: add(z, div(mul(s, x), y)).
  for (Instr& r : instrs_) {
    if (!plain(r, OpKind::kAdd) || r.c >= 0 || !floats(r.a)) continue;
    Instr* q = f.only_from(r.b, OpKind::kDivide);
    if (q == nullptr || q->c >= 0 || q->logistic != Instr::Logistic::kNone || !floats(q->b))
      continue;
    Instr* m = scaled(q->a);
    if (m == nullptr) continue;
    f.fold(q);
    f.fold(m);
    r = Instr{r.kind, r.dst, m->a, m->b, q->b, r.a, r.cmp, r.in_dtype};
    r.update = Update::kAddScaledQuotient;
  }
  f.drop_folded();

  // lerp by a scalar weight: fma(s, sub(x, y), z), the difference read by such fmas alone (a
  // lerp's two, one for a small weight and one for a large, of which a run computes one).
  std::vector<int> fmas_reading(slots_.size(), 0);
  auto difference = [&](const Instr& r) -> Instr* {
    if (!plain(r, OpKind::kFma) || !uniform_f32(r.a) || !floats(r.c)) return nullptr;
    Instr* sub = f.only_from(r.b, OpKind::kSubtract, f.readers(r.b));
    return sub != nullptr && sub->c < 0 && floats(sub->a) && floats(sub->b) ? sub : nullptr;
  };
  for (const Instr& r : instrs_)
    if (difference(r) != nullptr) ++fmas_reading[static_cast<std::size_t>(r.b)];
  for (Instr& r : instrs_) {
    Instr* sub = difference(r);
    if (sub == nullptr || fmas_reading[static_cast<std::size_t>(r.b)] != f.readers(r.b)) continue;
    r = Instr{r.kind, r.dst, r.a, sub->a, sub->b, r.c, r.cmp, r.in_dtype};
    r.update = Update::kFmaDifference;
  }
  // Each difference folded into all its readers is read no more.
  f.index();
  for (const Instr& in : instrs_)
    if (in.kind == OpKind::kSubtract && in.update == Update::kNone &&
        fmas_reading[static_cast<std::size_t>(in.dst)] > 0 && f.readers(in.dst) == 0)
      f.fold(&in);
  f.drop_folded();
}

}  // namespace vtrn::runtime::kernels
