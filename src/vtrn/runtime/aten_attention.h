// ATen's own CPU flash attention for the executor's float32 and bfloat16 attention calls
// (compiler/fused_attention.h, compiler/attention_through_memory.h): the torch layer installs
// it, and the calls' outputs (and the flash call's logsumexp, and the flash backward's
// gradients) are then the CPU's bits, since
// torch's scaled_dot_product_attention on float32 and bfloat16 CPU tensors runs that kernel
// (_scaled_dot_product_flash_attention_for_cpu) for every mask, causal flag and grouped-query
// layout the calls take. Its blocked online softmax and MKL products round otherwise than any
// formula of ops. Without it (the C++ tests, `vtrn hlo --run`) the executor's own kernels run.
#pragma once

#include <cstdint>

namespace vtrn::runtime::aten_attention {

/// One attention: query [B, H, L, D], key and value [B, Hk, S, D], row-major, float32 or (with
/// |bf16|) bfloat16 bits; the optional additive mask in float32 (0 / -inf for a boolean one),
/// of |mask_dims| (four, leading 1s added) broadcastable to [B, H, L, S].
struct Call {
  bool bf16 = false;
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, d = 0;
  const float* mask = nullptr;
  std::int64_t mask_dims[4] = {1, 1, 1, 1};
  bool causal = false;
  double scale = 1;
  void* out = nullptr;         ///< [B, H, L, D], of the query's type
  float* logsumexp = nullptr;  ///< [B, H, L] float32, or nullptr when not wanted
};

using Kernel = void (*)(const Call& call);

/// The flash backward (_scaled_dot_product_flash_attention_for_cpu_backward): the gradients of
/// query, key and value from the output's gradient and the forward's output and logsumexp, with
/// the forward's mask if it had one. Shapes and types as in Call (the logsumexp float32).
struct BackwardCall {
  bool bf16 = false;
  const void *grad_out = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr;
  const float* logsumexp = nullptr;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, d = 0;
  const float* mask = nullptr;  ///< as Call's
  std::int64_t mask_dims[4] = {1, 1, 1, 1};
  bool causal = false;
  double scale = 1;
  void *grad_q = nullptr, *grad_k = nullptr, *grad_v = nullptr;
};

using BackwardKernel = void (*)(const BackwardCall& call);

/// Installs |kernel| and |backward| (nullptr uninstalls). Safe against concurrent calls. The
/// through-memory attention takes its output from |kernel| only with |backward| installed too
/// (it then saves the logsumexp alone); the flash call takes it from |kernel| alone.
void install(Kernel kernel, BackwardKernel backward = nullptr);
/// The installed kernels, or nullptr.
Kernel installed();
BackwardKernel installed_backward();

}  // namespace vtrn::runtime::aten_attention
