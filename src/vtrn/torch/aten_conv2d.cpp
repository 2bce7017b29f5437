// Installs ATen's CPU convolution into the runtime (runtime/aten_conv2d.h). at::convolution is
// a composite op (there is no at::cpu:: entry): it runs through the dispatcher on CPU tensors
// over the executor's buffers, below autograd, on the stream's worker thread.
#include "vtrn/torch/aten_conv2d.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/from_blob.h>

#include <array>
#include <cstdint>
#include <optional>

#include "vtrn/runtime/aten_conv2d.h"
#include "vtrn/torch/aten_thread_budget.h"

namespace vtrn::torch_adapter {
namespace {

at::Tensor wrap(const float* p, at::IntArrayRef sizes) {
  return at::from_blob(const_cast<float*>(p), sizes, at::TensorOptions().dtype(at::kFloat));
}

void conv2d(const runtime::aten_conv2d::Call& c) {
  follow_thread_budget(c.threads);  // ATen picks oneDNN or its own kernel by the count
  const at::AutoDispatchBelowAutograd below_autograd;
  const std::array<std::int64_t, 1> bias_shape{c.w_dims[0]};
  std::optional<at::Tensor> bias;
  if (c.bias != nullptr) bias = wrap(c.bias, bias_shape);
  const std::array<std::int64_t, 2> no_output_padding{0, 0};
  const at::Tensor y =
      at::convolution(wrap(c.x, c.x_dims), wrap(c.weight, c.w_dims), bias, c.stride, c.padding,
                      c.dilation, /*transposed=*/false, no_output_padding, c.groups);
  wrap(c.y, c.y_dims).copy_(y);
}

void conv2d_backward(const runtime::aten_conv2d::BackwardCall& b) {
  const runtime::aten_conv2d::Call& c = b.forward;
  follow_thread_budget(c.threads);
  const at::AutoDispatchBelowAutograd below_autograd;
  const std::array<std::int64_t, 1> bias_shape{c.w_dims[0]};
  const std::array<std::int64_t, 2> no_output_padding{0, 0};
  const at::Tensor x = wrap(c.x, c.x_dims);
  auto [dx, dw, db] = at::convolution_backward(
      wrap(b.dy, c.y_dims), x, wrap(c.weight, c.w_dims),
      b.grads[2] ? at::OptionalIntArrayRef(bias_shape) : at::OptionalIntArrayRef(), c.stride,
      c.padding, c.dilation, /*transposed=*/false, no_output_padding, c.groups, b.grads);
  if (b.grads[0]) wrap(b.dx, c.x_dims).copy_(dx);
  if (b.grads[1]) wrap(b.dw, c.w_dims).copy_(dw);
  if (b.grads[2]) wrap(b.db, bias_shape).copy_(db);
}

}  // namespace

void install_aten_conv2d() { runtime::aten_conv2d::install(&conv2d, &conv2d_backward); }

}  // namespace vtrn::torch_adapter
