// CPU views of `neuron` device bytes, for the native kernels that run PyTorch's CPU kernels on
// device memory (device memory is host memory, so a view copies nothing).
//
// Promises:
//  * A CPU view carries the conjugate and negative view bits of the tensor it stands for, so CPU
//    kernels see the logical values.
//  * A DeviceView keeps its storage alive and records the view as it was when the op was
//    issued, so later set_/as_strided_ on the tensor cannot move what queued work reads.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>
#include <ATen/ops/_conj.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/Storage.h>
#include <c10/util/SmallVector.h>

namespace vtrn::torch_adapter {

/// CPU kernels see the logical values.
inline at::Tensor with_view_bits(at::Tensor alias, bool conj, bool neg) {
  if (conj) alias = at::_conj(alias);
  if (neg) alias = at::_neg_view(alias);
  return alias;
}

/// A CPU tensor over the same bytes as |t| (device memory is host memory).
inline at::Tensor cpu_alias(const at::Tensor& t) {
  return with_view_bits(
      at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU)),
      t.is_conj(), t.is_neg());
}

/// What queued work needs to find a tensor's bytes later: its storage (kept alive) and the
/// metadata as it was at enqueue time, so later set_/as_strided_ on the tensor cannot move it.
struct DeviceView {
  c10::Storage storage;
  c10::SmallVector<int64_t, 6> sizes;
  c10::SmallVector<int64_t, 6> strides;
  int64_t offset;
  at::ScalarType dtype;
  bool conj, neg;  // conjugate / negative view bits

  explicit DeviceView(const at::Tensor& t)
      : storage(t.storage()),
        sizes(t.sizes().begin(), t.sizes().end()),
        strides(t.strides().begin(), t.strides().end()),
        offset(t.storage_offset()),
        dtype(t.scalar_type()),
        conj(t.is_conj()),
        neg(t.is_neg()) {}

  at::Tensor cpu() const {
    auto* base = static_cast<char*>(storage.mutable_data()) +
                 offset * static_cast<int64_t>(c10::elementSize(dtype));
    return with_view_bits(at::from_blob(base, sizes, strides, at::TensorOptions().dtype(dtype)),
                          conj, neg);
  }
};

/// The device index of a neuron tensor.
inline c10::DeviceIndex index_of(const at::Tensor& t) { return t.device().index(); }

}  // namespace vtrn::torch_adapter
