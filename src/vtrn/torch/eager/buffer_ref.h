// A tensor's bytes as queued work sees them, or an inline scalar value: what a launch reads and
// writes.
//
// Promises:
//  * A BufferRef records the view as it was when the op was issued, so later
//    set_/as_strided_/resize_ on the tensor cannot move what queued work reads. It keeps its
//    storage alive until release_storage(): from then on it names the bytes by address, and a
//    device storage's block returns to the allocator when its last tensor dies, reused in
//    stream order (see device_allocator.cpp), as a CUDA kernel names its buffers by address.
//  * overlaps() and same_view() compare storages and byte ranges only; a scalar overlaps
//    nothing.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/Storage.h>
#include <c10/util/SmallVector.h>

namespace vtrn::torch_adapter::eager {

/// A tensor's bytes as queued work sees them: its storage (kept alive) and the view as it was
/// when the op was issued; or an inline scalar value.
struct BufferRef {
  c10::Storage storage;
  int64_t offset = 0;  // elements
  c10::SmallVector<int64_t, 6> sizes, strides;
  at::ScalarType dtype = at::kFloat;
  bool contiguous = true;
  bool is_scalar = false;
  bool fresh = false;       // a functional op's output, allocated by this call
  bool released = false;    // release_storage() was called: |address| names the bytes
  char* address = nullptr;  // base() at release_storage()
  alignas(8) std::array<uint8_t, 8> scalar{};

  /// Whether |t| is its buffer's last two dims transposed, the buffer dense (a contiguous
  /// tensor's .t() or .mT): a matmul lowering may read it where it lies
  /// (lowering::ArgSpec::stored_transposed).
  static bool is_stored_transposed(const at::Tensor& t) {
    const int64_t r = t.dim();
    if (r < 2 || t.is_contiguous() || t.numel() == 0) return false;
    const auto sz = t.sizes(), st = t.strides();
    if (st[r - 2] != 1 || st[r - 1] != sz[r - 2]) return false;
    int64_t expect = sz[r - 1] * sz[r - 2];
    for (int64_t d = r - 3; d >= 0; --d) {
      if (sz[d] != 1 && st[d] != expect) return false;
      expect *= sz[d];
    }
    return true;
  }
  /// The buffer behind a tensor for which is_stored_transposed() holds, as the dense tensor it
  /// stores (the last two dims swapped back).
  static BufferRef of_stored_transposed(const at::Tensor& t) {
    BufferRef b = of(t);
    const size_t r = b.sizes.size();
    std::swap(b.sizes[r - 1], b.sizes[r - 2]);
    int64_t stride = 1;
    for (size_t d = r; d-- > 0;) {
      b.strides[d] = stride;
      stride *= b.sizes[d];
    }
    b.contiguous = true;
    return b;
  }
  static BufferRef of(const at::Tensor& t) {
    BufferRef b;
    b.storage = t.storage();
    b.offset = t.storage_offset();
    b.sizes.assign(t.sizes().begin(), t.sizes().end());
    b.strides.assign(t.strides().begin(), t.strides().end());
    b.dtype = t.scalar_type();
    b.contiguous = t.is_contiguous();
    return b;
  }
  /// The float32 pairs [..., 2] of complex64 |t| (its view_as_real), or of(t) for any other
  /// dtype.
  static BufferRef of_pairs(const at::Tensor& t) {
    BufferRef b = of(t);
    if (t.scalar_type() != at::kComplexFloat) return b;
    b.offset *= 2;
    for (int64_t& s : b.strides) s *= 2;
    b.sizes.push_back(2);
    b.strides.push_back(1);
    b.dtype = at::kFloat;
    return b;
  }
  /// Gives up the reference to a device storage (any other is kept: only device blocks are
  /// reused in stream order) and returns it; queued work must be enqueued before the
  /// returned storage is dropped, so that a free fences it. overlaps() and same_view() are
  /// meaningless afterwards.
  c10::Storage release_storage() {
    if (is_scalar || released || storage.device_type() != c10::DeviceType::PrivateUse1) return {};
    address = base();
    released = true;
    return std::move(storage);
  }
  char* base() const {
    if (released) return address;
    return static_cast<char*>(storage.mutable_data()) +
           offset * static_cast<int64_t>(c10::elementSize(dtype));
  }
  at::Tensor cpu() const {
    return at::from_blob(base(), sizes, strides, at::TensorOptions().dtype(dtype));
  }
  int64_t numel() const { return c10::multiply_integers(sizes); }
  /// [first, last) bytes of the storage this view can touch.
  std::pair<int64_t, int64_t> byte_range() const {
    const int64_t es = static_cast<int64_t>(c10::elementSize(dtype));
    int64_t last = offset;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == 0) return {offset * es, offset * es};
      last += (sizes[i] - 1) * strides[i];
    }
    return {offset * es, (last + 1) * es};
  }
  bool same_view(const BufferRef& o) const {
    return !is_scalar && !o.is_scalar &&
           storage.unsafeGetStorageImpl() == o.storage.unsafeGetStorageImpl() &&
           offset == o.offset && dtype == o.dtype && sizes == o.sizes && strides == o.strides;
  }
  bool overlaps(const BufferRef& o) const {
    if (is_scalar || o.is_scalar ||
        storage.unsafeGetStorageImpl() != o.storage.unsafeGetStorageImpl())
      return false;
    auto [a0, a1] = byte_range();
    auto [b0, b1] = o.byte_range();
    return a0 < b1 && b0 < a1;
  }
};

inline BufferRef scalar_ref(const c10::IValue& v) {
  BufferRef b;
  b.is_scalar = true;
  if (v.isDouble()) {
    const double d = v.toDouble();
    std::memcpy(b.scalar.data(), &d, 8);
  } else if (v.isBool()) {
    b.scalar[0] = v.toBool() ? 1 : 0;
  } else {
    const int64_t i = v.toInt();
    std::memcpy(b.scalar.data(), &i, 8);
  }
  return b;
}

inline BufferRef cpu_scalar_ref(const at::Tensor& t) {
  BufferRef b;
  b.is_scalar = true;
  std::memcpy(b.scalar.data(), t.const_data_ptr(), c10::elementSize(t.scalar_type()));
  return b;
}

}  // namespace vtrn::torch_adapter::eager
