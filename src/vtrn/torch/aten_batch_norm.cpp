// Installs ATen's CPU batch norm and its backward into the runtime (runtime/aten_batch_norm.h),
// called through at::cpu:: on the executor's buffers: below the dispatcher, so no dispatch
// mode, profiler or autograd graph sees them.
#include "vtrn/torch/aten_batch_norm.h"

#include <ATen/ops/from_blob.h>
#include <ATen/ops/native_batch_norm_backward_cpu_dispatch.h>
#include <ATen/ops/native_batch_norm_cpu_dispatch.h>

#include <array>
#include <cstdint>
#include <optional>

#include "vtrn/runtime/aten_batch_norm.h"
#include "vtrn/torch/aten_thread_budget.h"

namespace vtrn::torch_adapter {
namespace {

at::Tensor wrap(const float* p, at::IntArrayRef sizes) {
  return at::from_blob(const_cast<float*>(p), sizes, at::TensorOptions().dtype(at::kFloat));
}

std::optional<at::Tensor> vector(const float* p, const std::array<std::int64_t, 1>& channels) {
  if (p == nullptr) return std::nullopt;
  return wrap(p, channels);
}

void batch_norm(const runtime::aten_batch_norm::Call& c) {
  follow_thread_budget(c.threads);
  const std::array<std::int64_t, 1> channels{c.dims[1]};
  // The running statistics are updated in place, as the CPU's kernel updates the module's.
  std::optional<at::Tensor> running_mean = vector(c.running_mean, channels);
  std::optional<at::Tensor> running_var = vector(c.running_var, channels);
  auto [y, mean, invstd] = at::cpu::native_batch_norm(wrap(c.x, c.dims), vector(c.weight, channels),
                                                      vector(c.bias, channels), running_mean,
                                                      running_var, c.training, c.momentum, c.eps);
  wrap(c.y, c.dims).copy_(y);
  if (c.training) {
    wrap(c.mean, channels).copy_(mean);
    wrap(c.invstd, channels).copy_(invstd);
  } else {  // evaluation saves no statistics: the call's are the running ones
    wrap(c.mean, channels).copy_(*running_mean);
    wrap(c.invstd, channels).copy_(running_var->add(c.eps).rsqrt());
  }
}

void batch_norm_backward(const runtime::aten_batch_norm::BackwardCall& c) {
  follow_thread_budget(c.threads);
  const std::array<std::int64_t, 1> channels{c.dims[1]};
  const at::Tensor a = wrap(c.a, channels), b = wrap(c.b, channels);
  std::optional<at::Tensor> running_mean, running_var, save_mean, save_invstd;
  if (c.training)
    save_mean = a, save_invstd = b;
  else
    running_mean = a, running_var = b;
  auto [dx, dweight, dbias] = at::cpu::native_batch_norm_backward(
      wrap(c.dy, c.dims), wrap(c.x, c.dims), vector(c.weight, channels), running_mean, running_var,
      save_mean, save_invstd, c.training, c.eps, {true, true, true});
  wrap(c.dx, c.dims).copy_(dx);
  wrap(c.dweight, channels).copy_(dweight);
  wrap(c.dbias, channels).copy_(dbias);
}

}  // namespace

void install_aten_batch_norm() {
  runtime::aten_batch_norm::install(&batch_norm, &batch_norm_backward);
}

}  // namespace vtrn::torch_adapter
