// scaled_dot_product_attention on `neuron`: PyTorch asks the device which fused kernel to use
// (_fused_sdp_choice); vtrn answers "overrideable" for what its fused lowering covers (no
// dropout; 4-d float operands; a boolean or float mask; grouped-query attention with
// enable_gqa). Everything else takes PyTorch's math decomposition, op by op.
//
// The overrideable kernel then does what TorchNeuron's does on trn2: where the NKI flash
// attention kernels take the shapes (query and key lengths multiples of 512, head size at most
// 128, key and value of one shape, no mask, no dropout), the forward and the backward are one
// flash kernel each (vtrn::flash_attention_forward / _backward): the scores stay on the chip
// and the forward saves the float32 logsumexp [B, H, L] for the backward. Otherwise they are
// one module each that goes through HBM (vtrn::sdpa_forward / vtrn::sdpa_backward), saving the
// attention probabilities (each row with its logsumexp). Both are lowered in lowerings_nn.cc.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <cmath>
#include <utility>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace vtrn::torch_adapter {
namespace {

// torch.nn.attention.SDPBackend values.
constexpr int64_t kMathBackend = 0;
constexpr int64_t kOverrideableBackend = 4;

// An attention mask the fused kernel adds to the scores: boolean or of the query's dtype,
// broadcastable to [B, H, L, S], needing no gradient (the kernel gives none).
bool mask_covered(const at::Tensor& mask, const at::Tensor& q, const at::Tensor& k) {
  if (mask.scalar_type() != at::kBool && mask.scalar_type() != q.scalar_type()) return false;
  if (mask.requires_grad() || mask.device() != q.device() || mask.dim() > 4) return false;
  const int64_t full[4] = {q.size(0), q.size(1), q.size(2), k.size(2)};
  for (int64_t i = 1; i <= mask.dim(); ++i) {
    const int64_t m = mask.size(mask.dim() - i), f = full[4 - i];
    if (m != f && m != 1) return false;
  }
  return true;
}

bool fused_attention_covers(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const std::optional<at::Tensor>& attn_mask, double dropout_p,
                            bool enable_gqa) {
  if (dropout_p != 0.0) return false;  // the math path draws dropout from the device generator
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return false;
  const auto d = q.scalar_type();
  if (k.scalar_type() != d || v.scalar_type() != d) return false;
  if (d != at::kFloat && d != at::kBFloat16 && d != at::kHalf) return false;
  if (q.size(0) != k.size(0) || k.size(0) != v.size(0) || k.size(1) != v.size(1) ||
      k.size(2) != v.size(2) || q.size(3) != k.size(3) || k.size(1) == 0)
    return false;  // broadcast batches take the math path
  // Fewer key/value heads than query heads only with enable_gqa (the math path raises else).
  if (q.size(1) != k.size(1) && (!enable_gqa || q.size(1) % k.size(1) != 0)) return false;
  // A mask with is_causal masks both ways, as the CPU's kernel does (the math path refuses it).
  if (attn_mask.has_value() && attn_mask->defined() && !mask_covered(*attn_mask, q, k))
    return false;
  return q.numel() > 0 && k.numel() > 0 && v.numel() > 0;
}

// TorchNeuron's condition for its NKI flash attention kernels, forward and backward.
bool flash_attention_covers(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const std::optional<at::Tensor>& attn_mask) {
  if (attn_mask.has_value() && attn_mask->defined()) return false;
  return q.size(2) % 512 == 0 && k.size(2) % 512 == 0 && q.size(3) <= 128 && k.sizes() == v.sizes();
}

}  // namespace

int64_t fused_sdp_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool /*is_causal*/, std::optional<double> /*scale*/, bool enable_gqa) {
  return fused_attention_covers(q, k, v, attn_mask, dropout_p, enable_gqa) ? kOverrideableBackend
                                                                           : kMathBackend;
}

namespace {

double softmax_scale(const at::Tensor& q, std::optional<double> scale) {
  return scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
}

using SdpaResult = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt,
                              c10::SymInt, at::Tensor, at::Tensor, at::Tensor>;

// The overrideable kernel's nine results from the output and what the backward reads (the
// logsumexp, or the probabilities with their logsumexp, in the logsumexp slot). No dropout: the RNG
// state slots PyTorch's autograd saves are empty.
SdpaResult sdpa_result(const at::Tensor& q, const at::Tensor& k, at::Tensor out, at::Tensor saved) {
  const at::Tensor empty_long = at::empty({}, q.options().dtype(at::kLong).device(at::kCPU));
  return {
      std::move(out),         std::move(saved), at::Tensor(), at::Tensor(), c10::SymInt(q.size(2)),
      c10::SymInt(k.size(2)), empty_long,       empty_long,   at::Tensor()};
}

SdpaResult sdpa_overrideable(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const std::optional<at::Tensor>& attn_bias, double dropout_p,
                             bool is_causal, bool /*return_debug_mask*/,
                             std::optional<double> scale) {
  TORCH_CHECK(fused_attention_covers(q, k, v, attn_bias, dropout_p,
                                     /*enable_gqa=*/q.size(1) != k.size(1)),
              "neuron's fused attention takes no dropout, a boolean or float attn_mask "
              "broadcastable to [batch, heads, query, key] that needs no "
              "gradient, and 4-d float query/key/value with matching batch sizes and key/value "
              "heads dividing the query heads; got query ",
              q.sizes(), ", key ", k.sizes(), ", value ", v.sizes(),
              ". scaled_dot_product_attention picks PyTorch's math path for anything else.");
  if (flash_attention_covers(q, k, v, attn_bias)) {
    static const auto flash =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("vtrn::flash_attention_forward", "")
            .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                      const at::Tensor&, bool, double)>();
    auto [out, logsumexp] = flash.call(q, k, v, is_causal, softmax_scale(q, scale));
    return sdpa_result(q, k, out, logsumexp);
  }
  static const auto forward = c10::Dispatcher::singleton()
                                  .findSchemaOrThrow("vtrn::sdpa_forward", "")
                                  .typed<std::tuple<at::Tensor, at::Tensor>(
                                      const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                      const std::optional<at::Tensor>&, bool, double)>();
  // The second result stands in the logsumexp slot: autograd hands it back to the backward
  // untouched, and vtrn's backward reads the attention probabilities and logsumexp from it.
  auto [out, saved] = forward.call(q, k, v, attn_bias, is_causal, softmax_scale(q, scale));
  return sdpa_result(q, k, out, saved);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> sdpa_overrideable_backward(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& attn_bias, std::array<bool, 4> /*grad_input_mask*/, const at::Tensor& out,
    const at::Tensor& saved, const at::Tensor& /*cum_seq_q*/, const at::Tensor& /*cum_seq_k*/,
    c10::SymInt /*max_q*/, c10::SymInt /*max_k*/, double /*dropout_p*/, bool is_causal,
    const at::Tensor& /*philox_seed*/, const at::Tensor& /*philox_offset*/,
    std::optional<double> scale) {
  if (saved.dim() == 3) {  // the flash forward's logsumexp [B, H, L]
    static const auto flash =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("vtrn::flash_attention_backward", "")
            .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                const at::Tensor&, const at::Tensor&, bool, double)>();
    auto [dq, dk, dv] =
        flash.call(grad_out, q, k, v, out, saved, is_causal, softmax_scale(q, scale));
    return {dq, dk, dv, at::Tensor()};
  }
  static const auto backward = c10::Dispatcher::singleton()
                                   .findSchemaOrThrow("vtrn::sdpa_backward", "")
                                   .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                                       const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                       const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                       const std::optional<at::Tensor>&, bool, double)>();
  // No mask arrives undefined, or (as openreg's tests pass it) as an empty tensor.
  std::optional<at::Tensor> bias;
  if (attn_bias.defined() && attn_bias.numel() > 0) bias = attn_bias;
  auto [dq, dk, dv] =
      backward.call(grad_out, q, k, v, out, saved, bias, is_causal, softmax_scale(q, scale));
  return {dq, dk, dv, at::Tensor()};
}

TORCH_LIBRARY(vtrn, m) {
  m.def(
      "sdpa_forward(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, bool is_causal, "
      "float scale) -> (Tensor, Tensor)");
  m.def(
      "sdpa_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor "
      "saved, Tensor? attn_bias, bool is_causal, float scale) -> (Tensor, Tensor, Tensor)");
  m.def(
      "flash_attention_forward(Tensor query, Tensor key, Tensor value, bool is_causal, float "
      "scale) -> (Tensor, Tensor)");
  m.def(
      "flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor "
      "out, Tensor logsumexp, bool is_causal, float scale) -> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", fused_sdp_choice);
  m.impl("_scaled_dot_product_fused_attention_overrideable", sdpa_overrideable);
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", sdpa_overrideable_backward);
}

}  // namespace
}  // namespace vtrn::torch_adapter

namespace at::native {
// scaled_dot_product_attention asks this stub (a DispatchStub, not the _fused_sdp_choice op).
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &vtrn::torch_adapter::fused_sdp_choice)
}  // namespace at::native
