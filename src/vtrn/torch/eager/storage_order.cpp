#include "vtrn/torch/eager/storage_order.h"

#include <algorithm>

#include <c10/core/WrapDimMinimal.h>

namespace vtrn::torch_adapter::eager {

Permutation dense_storage_order(const at::Tensor& t) {
  const int64_t rank = t.dim();
  if (rank < 2 || t.is_contiguous()) return {};
  Permutation perm(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    if (t.size(d) < 2) return {};
    perm[static_cast<size_t>(d)] = d;
  }
  std::sort(perm.begin(), perm.end(),
            [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  int64_t expect = 1;
  for (size_t k = perm.size(); k-- > 0;) {
    if (t.stride(perm[k]) != expect) return {};
    expect *= t.size(perm[k]);
  }
  return perm;
}

Permutation elementwise_storage_order(const SchemaInfo& info, const torch::jit::Stack& stack,
                                      size_t first, const at::Tensor*& full, bool& broadcasts) {
  full = nullptr;
  broadcasts = false;
  auto tensor_arg = [&](size_t i) -> const at::Tensor* {
    const Slot slot = info.slots[i];
    if (slot != Slot::kTensor && slot != Slot::kOut) return nullptr;
    const c10::IValue& v = stack[first + i];
    if (!v.isTensor() || !v.toTensor().defined() || v.toTensor().dim() == 0) return nullptr;
    return &v.toTensor();
  };
  for (size_t i = 0; i < info.num_args; ++i) {
    const Slot slot = info.slots[i];
    if (slot == Slot::kTensorList || slot == Slot::kOptionalTensorList || slot == Slot::kOutList)
      return {};
    const at::Tensor* t = tensor_arg(i);
    if (t != nullptr && (full == nullptr || t->dim() > full->dim() ||
                         (t->dim() == full->dim() && t->numel() > full->numel())))
      full = t;
  }
  if (full == nullptr) return {};
  const int64_t rank = full->dim();
  for (size_t i = 0; i < info.num_args; ++i) {
    const at::Tensor* t = tensor_arg(i);
    if (t == nullptr || t == full) continue;
    if (t->sizes() == full->sizes() && t->strides() == full->strides()) continue;
    // A broadcast operand: read-only, each of its dims (aligned to the right) of the full size
    // or 1, and not the full shape itself.
    if (info.mutable_input[i] || info.slots[i] == Slot::kOut || t->sizes() == full->sizes())
      return {};
    for (int64_t d = 1; d <= t->dim(); ++d) {
      const int64_t n = t->size(-d);
      if (n != 1 && n != full->size(rank - d)) return {};
    }
    broadcasts = true;
  }
  return dense_storage_order(*full);
}

Permutation reduction_storage_order(const at::Tensor& t, std::optional<c10::IntArrayRef> dims) {
  Permutation perm = dense_storage_order(t);
  if (perm.empty()) return {};
  const int64_t rank = t.dim();
  c10::SmallVector<bool, 6> reduced(static_cast<size_t>(rank), !dims || dims->empty());
  if (dims)
    for (int64_t d : *dims) reduced[static_cast<size_t>(c10::maybe_wrap_dim(d, rank))] = true;
  int64_t last_kept = -1;
  for (int64_t d : perm) {
    if (reduced[static_cast<size_t>(d)]) continue;
    if (d < last_kept) return {};  // kept dims out of their own order
    last_kept = d;
  }
  return perm;
}

bool sorts_an_expanded_line(const at::Tensor& t, int64_t dim) {
  if (t.dim() == 0) return false;
  const int64_t d = c10::maybe_wrap_dim(dim, t.dim());
  return t.stride(d) == 0 && t.size(d) > 1;
}

}  // namespace vtrn::torch_adapter::eager
