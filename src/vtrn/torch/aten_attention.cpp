// Installs ATen's CPU flash attention into the runtime (runtime/aten_attention.h), the kernels
// called on the executor's buffers: below the dispatcher, so no dispatch mode, profiler or
// autograd graph sees them.
#include "vtrn/torch/aten_attention.h"

// DispatchStub's call takes one kernel pointer per CPU capability torch was built with, and
// PyTorch's x86-64 builds have AVX2 and AVX-512 kernels: the header must declare the same
// signature as libtorch_cpu exports (DispatchStubImpl::get_call_ptr), which these select.
#if defined(__x86_64__)
#define HAVE_AVX512_CPU_DEFINITION
#define HAVE_AVX2_CPU_DEFINITION
#endif
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/empty.h>
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

// ATen's own kernels (the DispatchStubs _scaled_dot_product_flash_attention_for_cpu and its
// backward call) write into the buffers in place: they take the [B, L, H, D] results as strided
// views, so the [B, H, L, D] buffers are those views transposed, with no result to copy out.
void flash_attention(const runtime::aten_attention::Call& c) {
  const at::ScalarType t = type_of(c.bf16);
  const at::Tensor out = wrap(c.out, {c.batch, c.heads, c.q_len, c.d}, t).transpose(1, 2);
  const at::Tensor logsumexp =
      c.logsumexp != nullptr
          ? wrap(c.logsumexp, {c.batch, c.heads, c.q_len}).transpose(1, 2)
          : at::empty({c.batch, c.q_len, c.heads}, at::TensorOptions().dtype(at::kFloat));
  at::native::flash_attention_kernel(
      at::kCPU, out, logsumexp, wrap(c.q, {c.batch, c.heads, c.q_len, c.d}, t),
      wrap(c.k, {c.batch, c.kv_heads, c.kv_len, c.d}, t),
      wrap(c.v, {c.batch, c.kv_heads, c.kv_len, c.d}, t), /*dropout_p=*/0.0, c.causal,
      mask_of(c.mask, c.mask_dims, t), c.scale);
}

void flash_attention_backward(const runtime::aten_attention::BackwardCall& c) {
  // (Arrays, not IntArrayRef lists: a braced list dies with its declaration's statement.)
  const std::array<int64_t, 4> q_shape{c.batch, c.heads, c.q_len, c.d};
  const std::array<int64_t, 4> kv_shape{c.batch, c.kv_heads, c.kv_len, c.d};
  const at::ScalarType t = type_of(c.bf16);
  // The backward kernel takes every operand as [B, L, H, D] and sums into zeroed gradients.
  const auto in = [&](const void* p, const std::array<int64_t, 4>& shape) {
    return wrap(p, shape, t).transpose(1, 2);
  };
  const auto gradient = [&](void* p, const std::array<int64_t, 4>& shape) {
    return wrap(p, shape, t).zero_().transpose(1, 2);
  };
  at::native::flash_attention_backward_kernel(
      at::kCPU, gradient(c.grad_q, q_shape), gradient(c.grad_k, kv_shape),
      gradient(c.grad_v, kv_shape), in(c.grad_out, q_shape), in(c.q, q_shape), in(c.k, kv_shape),
      in(c.v, kv_shape), in(c.out, q_shape),
      wrap(c.logsumexp, {c.batch, c.heads, c.q_len}).transpose(1, 2), /*dropout_p=*/0.0, c.causal,
      mask_of(c.mask, c.mask_dims, t), c.scale);
}

}  // namespace

void install_aten_attention() {
  runtime::aten_attention::install(&flash_attention, &flash_attention_backward);
}

}  // namespace vtrn::torch_adapter
