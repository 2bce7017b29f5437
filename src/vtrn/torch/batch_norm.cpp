// native_batch_norm on `neuron`. Its schema does not mark running_mean and running_var as
// written, yet training updates them in place: a lowered kernel (which writes only what the
// schema says) or the generic CPU fallback (which copies back only those arguments) would leave
// them stale. This kernel runs vtrn::batch_norm (one module, lowered in lowerings_norm.cc) and
// copies the new running statistics into the old; a call that module does not cover runs
// native_batch_norm on CPU copies and copies the statistics back the same way.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <optional>
#include <tuple>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/native_batch_norm.h>
#include <torch/library.h>

#include "vtrn/torch/eager/metrics.h"
#include "vtrn/torch/op_tracking.h"

namespace vtrn::torch_adapter {
namespace {

using OptTensor = std::optional<at::Tensor>;

bool present(const OptTensor& t) { return t.has_value() && t->defined(); }

bool is_lowered_float(at::ScalarType t) {
  return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf;
}

// What vtrn::batch_norm takes: float input of rank >= 2 with elements, per-channel vectors of
// float type on the same device, and running statistics when evaluating.
bool covered(const at::Tensor& input, std::initializer_list<const OptTensor*> params, bool training,
             const OptTensor& running_mean, const OptTensor& running_var) {
  if (!is_lowered_float(input.scalar_type()) || input.dim() < 2 || input.numel() == 0) return false;
  for (const OptTensor* p : params) {
    if (!present(*p)) continue;
    const at::Tensor& t = **p;
    if (t.device() != input.device() || !is_lowered_float(t.scalar_type()) || t.dim() != 1 ||
        t.size(0) != input.size(1))
      return false;
  }
  return training || (present(running_mean) && present(running_var));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> on_cpu(const at::Tensor& input,
                                                      const OptTensor& weight,
                                                      const OptTensor& bias,
                                                      const OptTensor& running_mean,
                                                      const OptTensor& running_var, bool training,
                                                      double momentum, double eps) {
  count_fallback();
  record_fallback("aten::native_batch_norm");
  // float64 computes as float32, the device's policy for every float64 op.
  auto cpu = [](const OptTensor& t) -> OptTensor {
    if (!present(t)) return std::nullopt;
    at::Tensor c = t->cpu();
    return c.scalar_type() == at::kDouble ? c.to(at::kFloat) : c;
  };
  OptTensor rm = cpu(running_mean), rv = cpu(running_var);
  auto [out, mean, invstd] =
      at::native_batch_norm(*cpu(input), cpu(weight), cpu(bias), rm, rv, training, momentum, eps);
  if (present(running_mean)) running_mean->copy_(*rm);
  if (present(running_var)) running_var->copy_(*rv);
  auto back = [&](const at::Tensor& t, at::ScalarType like) {
    return t.to(input.device(), like == at::kDouble ? at::kDouble : t.scalar_type());
  };
  return {back(out, input.scalar_type()), back(mean, input.scalar_type()),
          back(invstd, input.scalar_type())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const OptTensor& weight, const OptTensor& bias,
    const OptTensor& running_mean, const OptTensor& running_var, bool training, double momentum,
    double eps) {
  if (!covered(input, {&weight, &bias, &running_mean, &running_var}, training, running_mean,
               running_var))
    return on_cpu(input, weight, bias, running_mean, running_var, training, momentum, eps);
  VTRN_RECORD_OP("native_batch_norm");
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("vtrn::batch_norm", "")
          .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
              const at::Tensor&, const OptTensor&, const OptTensor&, const OptTensor&,
              const OptTensor&, bool, double, double)>();
  auto [out, mean, invstd, new_mean, new_var] =
      op.call(input, weight, bias, running_mean, running_var, training, momentum, eps);
  if (!training) {
    // Evaluation saves no statistics: the CPU kernel returns empty ones.
    const at::Tensor none = at::empty({0}, mean.options());
    return {out, none, none.clone()};
  }
  if (present(running_mean)) running_mean->copy_(new_mean);
  if (present(running_var)) running_var->copy_(new_var);
  return {out, mean, invstd};
}

TORCH_LIBRARY_FRAGMENT(vtrn, m) {
  m.def(
      "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? "
      "running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, "
      "Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("native_batch_norm", native_batch_norm); }

}  // namespace
}  // namespace vtrn::torch_adapter
