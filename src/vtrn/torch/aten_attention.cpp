// Installs ATen's CPU flash attention into the runtime (runtime/aten_attention.h), the kernels
// called on the executor's buffers: below the dispatcher, so no dispatch mode, profiler or
// autograd graph sees them.
#include "vtrn/torch/aten_attention.h"

// DispatchStub's call takes one kernel pointer per CPU capability torch was built with, and
// PyTorch's x86-64 builds have AVX2 and AVX-512 kernels: the header must declare the same
// signature as libtorch_cpu exports (DispatchStubImpl::get_call_ptr), which these select.
// Elsewhere the kernels are called through their ops (at::cpu::), and their results copied.
#if defined(__x86_64__)
#define HAVE_AVX512_CPU_DEFINITION
#define HAVE_AVX2_CPU_DEFINITION
#include <ATen/native/transformers/attention.h>
#else
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward_cpu_dispatch.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_cpu_dispatch.h>
#endif
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

// ATen's kernels (the DispatchStubs of _scaled_dot_product_flash_attention_for_cpu and its
// backward) take and give every tensor as [B, L, H, D] (the logsumexp [B, L, H]), strided
// views allowed: the executor's [B, H, L, D] buffers, transposed, are written in place.
void forward_kernel(const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& q,
                    const at::Tensor& k, const at::Tensor& v, bool causal,
                    const std::optional<at::Tensor>& mask, double scale) {
#if defined(__x86_64__)
  at::native::flash_attention_kernel(at::kCPU, out, logsumexp, q, k, v, /*dropout_p=*/0.0, causal,
                                     mask, scale);
#else
  auto [o, lse] =
      at::cpu::_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, mask, scale);
  out.copy_(o.transpose(1, 2));
  logsumexp.copy_(lse.transpose(1, 2));
#endif
}

void backward_kernel(const at::Tensor& grad_q, const at::Tensor& grad_k, const at::Tensor& grad_v,
                     const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k,
                     const at::Tensor& v, const at::Tensor& out, const at::Tensor& logsumexp,
                     bool causal, const std::optional<at::Tensor>& mask, double scale) {
#if defined(__x86_64__)
  at::native::flash_attention_backward_kernel(at::kCPU, grad_q, grad_k, grad_v, grad_out, q, k, v,
                                              out, logsumexp, /*dropout_p=*/0.0, causal, mask,
                                              scale);
#else
  const auto back = [](const at::Tensor& t) { return t.transpose(1, 2); };
  auto [dq, dk, dv] = at::cpu::_scaled_dot_product_flash_attention_for_cpu_backward(
      back(grad_out), back(q), back(k), back(v), back(out), back(logsumexp), 0.0, causal, mask,
      scale);
  grad_q.copy_(back(dq));
  grad_k.copy_(back(dk));
  grad_v.copy_(back(dv));
#endif
}

void flash_attention(const runtime::aten_attention::Call& c) {
  const at::ScalarType t = type_of(c.bf16);
  const at::Tensor out = wrap(c.out, {c.batch, c.heads, c.q_len, c.d}, t).transpose(1, 2);
  const at::Tensor logsumexp =
      c.logsumexp != nullptr
          ? wrap(c.logsumexp, {c.batch, c.heads, c.q_len}).transpose(1, 2)
          : at::empty({c.batch, c.q_len, c.heads}, at::TensorOptions().dtype(at::kFloat));
  // The forward kernel takes the query, key and value as [B, H, L, D].
  forward_kernel(out, logsumexp, wrap(c.q, {c.batch, c.heads, c.q_len, c.d}, t),
                 wrap(c.k, {c.batch, c.kv_heads, c.kv_len, c.d}, t),
                 wrap(c.v, {c.batch, c.kv_heads, c.kv_len, c.d}, t), c.causal,
                 mask_of(c.mask, c.mask_dims, t), c.scale);
}

void flash_attention_backward(const runtime::aten_attention::BackwardCall& c) {
  // (Arrays, not IntArrayRef lists: a braced list dies with its declaration's statement.)
  const std::array<int64_t, 4> q_shape{c.batch, c.heads, c.q_len, c.d};
  const std::array<int64_t, 4> kv_shape{c.batch, c.kv_heads, c.kv_len, c.d};
  const at::ScalarType t = type_of(c.bf16);
  const auto in = [&](const void* p, const std::array<int64_t, 4>& shape) {
    return wrap(p, shape, t).transpose(1, 2);
  };
  // The kernel sums into its gradients: they start at zero.
  const auto gradient = [&](void* p, const std::array<int64_t, 4>& shape) {
    return wrap(p, shape, t).zero_().transpose(1, 2);
  };
  backward_kernel(gradient(c.grad_q, q_shape), gradient(c.grad_k, kv_shape),
                  gradient(c.grad_v, kv_shape), in(c.grad_out, q_shape), in(c.q, q_shape),
                  in(c.k, kv_shape), in(c.v, kv_shape), in(c.out, q_shape),
                  wrap(c.logsumexp, {c.batch, c.heads, c.q_len}).transpose(1, 2), c.causal,
                  mask_of(c.mask, c.mask_dims, t), c.scale);
}

}  // namespace

void install_aten_attention() {
  runtime::aten_attention::install(&flash_attention, &flash_attention_backward);
}

}  // namespace vtrn::torch_adapter
