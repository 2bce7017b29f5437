// Installs ATen's CPU flash attention into the runtime (runtime/aten_attention.h), called through
// at::cpu:: on the executor's buffers: below the dispatcher, so no dispatch mode, profiler or
// autograd graph sees it.
#include "vtrn/torch/aten_attention.h"

#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward_cpu_dispatch.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_cpu_dispatch.h>
#include <ATen/ops/from_blob.h>

#include <array>
#include <cstdint>
#include <optional>

#include "vtrn/runtime/aten_attention.h"

namespace vtrn::torch_adapter {
namespace {

at::Tensor wrap(const void* p, at::IntArrayRef sizes, at::ScalarType type = at::kFloat) {
  return at::from_blob(const_cast<void*>(p), sizes, at::TensorOptions().dtype(type));
}

at::ScalarType type_of(bool bf16) { return bf16 ? at::kBFloat16 : at::kFloat; }

// The kernels take a mask of the query's type (0 and -inf are exact in bfloat16, and a bfloat16
// mask's values came from bfloat16).
std::optional<at::Tensor> mask_of(const float* mask, const std::int64_t (&dims)[4],
                                  at::ScalarType t) {
  if (mask == nullptr) return std::nullopt;
  return wrap(mask, dims).to(t);
}

void flash_attention(const runtime::aten_attention::Call& c) {
  const at::ScalarType t = type_of(c.bf16);
  const at::Tensor q = wrap(c.q, {c.batch, c.heads, c.q_len, c.d}, t);
  const at::Tensor k = wrap(c.k, {c.batch, c.kv_heads, c.kv_len, c.d}, t);
  const at::Tensor v = wrap(c.v, {c.batch, c.kv_heads, c.kv_len, c.d}, t);
  auto [out, logsumexp] = at::cpu::_scaled_dot_product_flash_attention_for_cpu(
      q, k, v, /*dropout_p=*/0.0, c.causal, mask_of(c.mask, c.mask_dims, t), c.scale);
  wrap(c.out, {c.batch, c.heads, c.q_len, c.d}, t).copy_(out);
  if (c.logsumexp != nullptr) wrap(c.logsumexp, {c.batch, c.heads, c.q_len}).copy_(logsumexp);
}

void flash_attention_backward(const runtime::aten_attention::BackwardCall& c) {
  // (Arrays, not IntArrayRef lists: a braced list dies with its declaration's statement.)
  const std::array<int64_t, 4> q_shape{c.batch, c.heads, c.q_len, c.d};
  const std::array<int64_t, 4> kv_shape{c.batch, c.kv_heads, c.kv_len, c.d};
  const at::ScalarType t = type_of(c.bf16);
  auto [dq, dk, dv] = at::cpu::_scaled_dot_product_flash_attention_for_cpu_backward(
      wrap(c.grad_out, q_shape, t), wrap(c.q, q_shape, t), wrap(c.k, kv_shape, t),
      wrap(c.v, kv_shape, t), wrap(c.out, q_shape, t),
      wrap(c.logsumexp, {c.batch, c.heads, c.q_len}), /*dropout_p=*/0.0, c.causal,
      mask_of(c.mask, c.mask_dims, t), c.scale);
  wrap(c.grad_q, q_shape, t).copy_(dq);
  wrap(c.grad_k, kv_shape, t).copy_(dk);
  wrap(c.grad_v, kv_shape, t).copy_(dv);
}

}  // namespace

void install_aten_attention() {
  runtime::aten_attention::install(&flash_attention, &flash_attention_backward);
}

}  // namespace vtrn::torch_adapter
