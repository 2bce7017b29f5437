// Installs ATen's CPU group norm and its backward into the runtime (runtime/aten_group_norm.h),
// called through at::cpu:: on the executor's buffers: below the dispatcher, so no dispatch
// mode, profiler or autograd graph sees them.
#include "vtrn/torch/aten_group_norm.h"

#include <ATen/ops/from_blob.h>
#include <ATen/ops/native_group_norm_backward_cpu_dispatch.h>
#include <ATen/ops/native_group_norm_cpu_dispatch.h>

#include <array>
#include <cstdint>
#include <optional>

#include "vtrn/runtime/aten_group_norm.h"
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

// N, C and HxW of a call's x.
std::array<std::int64_t, 3> sizes_of(const std::vector<std::int64_t>& dims) {
  std::int64_t hw = 1;
  for (std::size_t i = 2; i < dims.size(); ++i) hw *= dims[i];
  return {dims[0], dims[1], hw};
}

void group_norm(const runtime::aten_group_norm::Call& c) {
  follow_thread_budget(c.threads);
  const auto [n, channels, hw] = sizes_of(c.dims);
  const std::array<std::int64_t, 1> vector_shape{channels};
  const std::array<std::int64_t, 2> stats{n, c.groups};
  auto [y, mean, rstd] =
      at::cpu::native_group_norm(wrap(c.x, c.dims), vector(c.weight, vector_shape),
                                 vector(c.bias, vector_shape), n, channels, hw, c.groups, c.eps);
  wrap(c.y, c.dims).copy_(y);
  wrap(c.mean, stats).copy_(mean);
  wrap(c.rstd, stats).copy_(rstd);
}

void group_norm_backward(const runtime::aten_group_norm::BackwardCall& c) {
  follow_thread_budget(c.threads);
  const auto [n, channels, hw] = sizes_of(c.dims);
  const std::array<std::int64_t, 1> vector_shape{channels};
  const std::array<std::int64_t, 2> stats{n, c.groups};
  // ATen makes the parameter gradients like the weight: without one it gives none.
  const bool affine = c.weight != nullptr;
  auto [dx, dweight, dbias] = at::cpu::native_group_norm_backward(
      wrap(c.dy, c.dims), wrap(c.x, c.dims), wrap(c.mean, stats), wrap(c.rstd, stats),
      vector(c.weight, vector_shape), n, channels, hw, c.groups, {true, affine, affine});
  wrap(c.dx, c.dims).copy_(dx);
  if (affine) {
    wrap(c.dweight, vector_shape).copy_(dweight);
    wrap(c.dbias, vector_shape).copy_(dbias);
  } else {
    wrap(c.dweight, vector_shape).zero_();
    wrap(c.dbias, vector_shape).zero_();
  }
}

}  // namespace

void install_aten_group_norm() {
  runtime::aten_group_norm::install(&group_norm, &group_norm_backward);
}

}  // namespace vtrn::torch_adapter
