// Installs ATen's CPU layer norm backward into the runtime (runtime/aten_layer_norm_backward.h),
// called through at::cpu:: on the executor's buffers: below the dispatcher, so no dispatch mode,
// profiler or autograd graph sees it.
#include "vtrn/torch/aten_layer_norm.h"

#include <ATen/ops/from_blob.h>
#include <ATen/ops/native_layer_norm_backward_cpu_dispatch.h>

#include <array>
#include <cstdint>
#include <optional>

#include "vtrn/runtime/aten_layer_norm_backward.h"
#include "vtrn/torch/aten_thread_budget.h"

namespace vtrn::torch_adapter {
namespace {

at::Tensor wrap(const float* p, at::IntArrayRef sizes) {
  return at::from_blob(const_cast<float*>(p), sizes, at::TensorOptions().dtype(at::kFloat));
}

void layer_norm_backward(const runtime::aten_layer_norm_backward::Call& c) {
  // The weight and bias gradients sum per-thread partial sums: split as the CPU splits them.
  follow_thread_budget(c.threads);
  // (Arrays, not IntArrayRef lists: a braced list dies with its declaration's statement.)
  const std::array<std::int64_t, 2> x_shape{c.rows, c.n}, stat_shape{c.rows, 1};
  const std::array<std::int64_t, 1> column{c.n};
  std::optional<at::Tensor> gamma, beta;
  if (c.gamma != nullptr) gamma = wrap(c.gamma, column);
  // Only the bias's shape matters (its gradient's buffer is made like it).
  if (c.beta) beta = wrap(c.dbeta, column);
  auto [dx, dgamma, dbeta] = at::cpu::native_layer_norm_backward(
      wrap(c.dy, x_shape), wrap(c.x, x_shape), column, wrap(c.mean, stat_shape),
      wrap(c.rstd, stat_shape), gamma, beta, {true, c.gamma != nullptr, c.beta});
  wrap(c.dx, x_shape).copy_(dx);
  if (c.gamma != nullptr) wrap(c.dgamma, column).copy_(dgamma);
  if (c.beta) wrap(c.dbeta, column).copy_(dbeta);
}

}  // namespace

void install_aten_layer_norm() { runtime::aten_layer_norm_backward::install(&layer_norm_backward); }

}  // namespace vtrn::torch_adapter
