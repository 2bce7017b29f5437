// The fused optimizers PyTorch picks on an accelerator (torch.optim.Adam/AdamW(fused=True)):
// one module updates every parameter, following the arithmetic of ATen's CPU fused kernel
// (FusedAdamKernel.cpp): float32 opmath, exp_avg by lerp, bias corrections in float64.
#include <cmath>

#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;

// _fused_adam(w)_(self[], grads[], exp_avgs[], exp_avg_sqs[], max_exp_avg_sqs[], state_steps[],
//   *, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale?, found_inf?)
LowerFn fused_adam(bool adamw) {
  return [adamw](Lowerer& L) -> std::vector<Value> {
    const auto& params = L.tensors(0);
    const auto& grads = L.tensors(1);
    const auto& exp_avgs = L.tensors(2);
    const auto& exp_avg_sqs = L.tensors(3);
    const auto& steps = L.tensors(5);
    if (L.flag(11)) throw Unsupported("fused Adam with amsgrad");
    if (L.has(13) || L.has(14)) throw Unsupported("fused Adam with grad_scale/found_inf");
    const std::size_t n = params.size();
    if (grads.size() != n || exp_avgs.size() != n || exp_avg_sqs.size() != n || steps.size() != n)
      throw Unsupported("fused Adam lists of different lengths");
    const double beta1 = L.real(7), beta2 = L.real(8), weight_decay = L.real(9), eps = L.real(10);
    const bool maximize = L.flag(12);
    std::vector<Value> new_params, new_avgs, new_sqs;
    for (std::size_t i = 0; i < n; ++i) {
      const DType d = L.dtype(params[i]);
      L.require_claimed(d);
      const DType c = opmath(d);
      Value p = L.convert(params[i], c), g = L.convert(grads[i], c);
      Value m = L.convert(exp_avgs[i], c), v = L.convert(exp_avg_sqs[i], c);
      auto full = [&](Value like, double x) { return L.full_like(like, x); };
      auto bcast = [&](Value scalar) { return L.broadcast_to(L.convert(scalar, c), L.shape(p)); };
      Value lr64 = L.scalar(6, DType::kF64);
      if (maximize) g = L.b.neg(g);
      if (weight_decay != 0.0) {
        if (adamw) {
          Value factor = L.b.sub(L.constant(1.0, DType::kF64),
                                 L.b.mul(lr64, L.constant(weight_decay, DType::kF64)));
          p = L.b.mul(p, bcast(factor));
        } else {
          g = L.b.add(g, L.b.mul(p, full(p, weight_decay)));
        }
      }
      const double w = 1.0 - beta1;  // exp_avg.lerp_(grad, 1 - beta1)
      m = std::abs(w) < 0.5 ? L.b.add(m, L.b.mul(full(m, w), L.b.sub(g, m)))
                            : L.b.sub(g, L.b.mul(L.b.sub(g, m), full(m, 1.0 - w)));
      v = L.b.add(L.b.mul(v, full(v, beta2)), L.b.mul(L.b.mul(full(v, 1.0 - beta2), g), g));
      // Bias corrections from this parameter's step, in float64.
      Value step = L.b.reshape(L.convert(steps[i], DType::kF64), {});
      Value bc1 = L.b.sub(L.constant(1.0, DType::kF64),
                          L.b.binary(OpKind::kPower, L.constant(beta1, DType::kF64), step));
      Value bc2 = L.b.sub(L.constant(1.0, DType::kF64),
                          L.b.binary(OpKind::kPower, L.constant(beta2, DType::kF64), step));
      Value step_size = L.b.div(lr64, bc1);
      Value bc2_sqrt = L.b.unary(OpKind::kSqrt, bc2);
      Value denom = L.b.add(L.b.div(L.b.unary(OpKind::kSqrt, v), bcast(bc2_sqrt)), full(v, eps));
      p = L.b.sub(p, L.b.div(L.b.mul(bcast(step_size), m), denom));
      new_params.push_back(L.convert(p, d));
      new_avgs.push_back(L.convert(m, L.dtype(exp_avgs[i])));
      new_sqs.push_back(L.convert(v, L.dtype(exp_avg_sqs[i])));
    }
    // Outputs in the order of the mutable arguments: params, grads (unchanged), exp_avgs,
    // exp_avg_sqs (max_exp_avg_sqs is empty without amsgrad).
    std::vector<Value> out = new_params;
    for (std::size_t i = 0; i < n; ++i) out.push_back(kUnchanged);
    out.insert(out.end(), new_avgs.begin(), new_avgs.end());
    out.insert(out.end(), new_sqs.begin(), new_sqs.end());
    return out;
  };
}

}  // namespace

void add_optimizer_lowerings(std::vector<OpLowering>& r) {
  OpLowering adamw = entry(floats(), fused_adam(true), true);
  adamw.runtime_floats = {6};
  add(r, {"_fused_adamw_"}, adamw);
  OpLowering adam = entry(floats(), fused_adam(false), true);
  adam.runtime_floats = {6};
  add(r, {"_fused_adam_"}, adam);
}

}  // namespace vtrn::lowering
