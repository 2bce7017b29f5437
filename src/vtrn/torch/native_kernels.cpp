// The native ATen kernels of `neuron` that move or fill bytes rather than compute: factories,
// views and metadata, copies between devices, fills, host reads and asynchronous asserts.
//
// Device memory is host memory, so each kernel runs PyTorch's CPU implementation on a CPU view
// of the device bytes (no copy). Factories and views queue nothing; copies and fills are queued
// on the current stream; host reads wait for it.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <cstddef>
#include <string>

#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/zero_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "vtrn/torch/device.h"
#include "vtrn/torch/device_view.h"
#include "vtrn/torch/op_tracking.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {
namespace {

void check_dtype_supported(at::ScalarType dtype) {
  if (c10::isFloat8Type(dtype)) {
    const auto& config = device_config();
    TORCH_CHECK(config.instance->chip->name == "Trainium3", "FP8 requires Trainium3: ", dtype,
                " tensors cannot be created on ", config.describe(),
                ". Set NEURON_RT_FAKE_INSTANCE_TYPE to a trn3 instance, or use bfloat16.");
  }
}

void check_neuron_factory_args(c10::Device device, std::optional<c10::Layout> layout,
                               std::optional<bool> pin_memory, at::ScalarType dtype) {
  TORCH_CHECK(device.is_privateuseone(), "Expected neuron device, got ", device.str());
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "neuron tensors must be strided; got layout ", c10::layout_or_default(layout),
              ". Create the tensor on cpu, or use torch.strided.");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory),
              "pin_memory=True applies to cpu tensors only; a neuron tensor is device memory. "
              "Pin the cpu tensor you copy from instead.");
  check_dtype_supported(dtype);
}

//===----------------------------------------------------------------------===//
// Factories, views and metadata (no queued work)
//===----------------------------------------------------------------------===//

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
  VTRN_RECORD_OP("empty.memory_format");
  const c10::Device target = c10::device_or_default(device);
  check_neuron_factory_args(target, layout, pin_memory, c10::dtype_or_default(dtype));
  const c10::DeviceGuard guard(target);
  return at::detail::empty_generic(size, at::GetAllocator(at::kPrivateUse1),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  VTRN_RECORD_OP("empty_strided");
  const c10::Device target = c10::device_or_default(device);
  check_neuron_factory_args(target, layout, pin_memory, c10::dtype_or_default(dtype));
  const c10::DeviceGuard guard(target);
  return at::detail::empty_strided_generic(size, stride, at::GetAllocator(at::kPrivateUse1),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> storage_offset) {
  VTRN_RECORD_OP("as_strided");
  return at::cpu::as_strided_symint(self, size, stride, std::move(storage_offset));
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  VTRN_RECORD_OP("view");
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

// The view ops whose only kernels are per backend. PyTorch's CPU kernels build the view from
// the tensor's own storage and key set, so on device memory they return a `neuron` view of the
// same bytes; the CPU fallback would return a copy, and writes through it would be lost.
at::Tensor view_as_real(const at::Tensor& self) {
  VTRN_RECORD_OP("view_as_real");
  return at::native::view_as_real(self);
}

at::Tensor view_as_complex(const at::Tensor& self) {
  VTRN_RECORD_OP("view_as_complex");
  return at::native::view_as_complex(self);
}

at::Tensor unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  VTRN_RECORD_OP("unfold");
  return at::native::unfold(self, dimension, size, step);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size,
                         c10::SymIntArrayRef stride) {
  VTRN_RECORD_OP("_reshape_alias");
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& resize(const at::Tensor& self, c10::SymIntArrayRef size,
                         std::optional<at::MemoryFormat> memory_format) {
  VTRN_RECORD_OP("resize_");
  const auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  const int64_t numel = c10::multiply_integers(sizes);
  const uint64_t needed =
      static_cast<uint64_t>(self.storage_offset() + numel) * self.element_size();
  // Growing reallocates the storage: queued work on the old bytes must finish first.
  if (self.storage().nbytes() < needed) synchronize(index_of(self));
  const c10::DeviceGuard guard(self.device());
  return at::native::resize_(self, sizes, memory_format);
}

// set_() with no source: an empty storage of this device, as the CPU gives an empty CPU one.
at::Tensor& set_empty(at::Tensor& self) {
  VTRN_RECORD_OP("set_");
  const c10::DeviceGuard guard(self.device());
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, at::GetAllocator(at::kPrivateUse1),
                     /*resizable=*/true);
  return self.set_(std::move(empty), 0, {0}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  VTRN_RECORD_OP("set_.source_Tensor");
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_source_storage(at::Tensor& self, at::Storage source) {
  VTRN_RECORD_OP("set_.source_Storage");
  return at::native::set_(self, std::move(source));
}

at::Tensor& set_source_storage_offset(at::Tensor& self, at::Storage source, c10::SymInt offset,
                                      c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  VTRN_RECORD_OP("set_.source_Storage_storage_offset");
  return at::cpu::set__symint(self, std::move(source), std::move(offset), size, stride);
}

// A freed block is fenced by every stream's queued work (device_allocator.cpp), so a tensor
// used on another stream is never reused early; there is nothing to record.
void record_stream(at::Tensor& self, c10::Stream stream) {
  VTRN_RECORD_OP("record_stream");
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream: expected a neuron stream, got ", stream.device_type());
}

// Whether `param.data = other` may swap |from|'s storage into |self| in place. c10 answers yes
// for two dense tensors of the built-in devices only, so without this a neuron tensor and a
// cpu one would be incompatible, and nn.Module._apply (`.to("neuron")`, `.cpu()`) would make a
// new Parameter per use of a shared one, untying tied weights. A neuron tensor is a dense
// strided tensor like a CUDA one: it is compatible with every tensor c10 calls dense.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const auto is_dense = [](c10::DispatchKeySet keys) {
    constexpr auto dense_backends = c10::DispatchKeySet(
        {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit,
         c10::BackendComponent::MPSBit, c10::BackendComponent::HIPBit,
         c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
         c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
    return keys.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) &&
           keys.has_any(dense_backends);
  };
  return (is_dense(self.key_set()) && is_dense(from.key_set())) ||
         self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

//===----------------------------------------------------------------------===//
// Copies, fills and host reads
//===----------------------------------------------------------------------===//

// copy_'s checks on the CPU (shapes broadcast to the destination's, a destination without
// self-overlapping elements, no partial overlap of source and destination), made here because
// the copy itself may be queued: an error in queued work surfaces only at a later, unrelated
// synchronize.
void check_copy(const at::Tensor& src, const at::Tensor& dst) {
  const auto shape = at::infer_size_dimvector(dst.sizes(), src.sizes());
  TORCH_CHECK(dst.sizes().equals(shape), "output with shape ", dst.sizes(),
              " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, src);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  VTRN_RECORD_OP("_copy_from");
  TORCH_CHECK(self.defined() && dst.defined(),
              "_copy_from: source and destination must be defined");
  check_copy(self, dst);
  if (self.numel() == 0) return dst;
  if (!self.is_cpu() && !dst.is_cpu()) {
    // neuron -> neuron: queued on the destination's stream, after the source's producer.
    if (index_of(self) != index_of(dst)) sync_current_stream(index_of(self));
    const double bytes = static_cast<double>(self.nbytes() + dst.nbytes());
    run_kernel(index_of(dst), "aten::_copy_from", modeled_device_copy(bytes), HostCost{bytes},
               [src = DeviceView(self), out = DeviceView(dst)] {
                 at::Tensor out_cpu = out.cpu();
                 at::native::copy_(out_cpu, src.cpu(), false);
               });
  } else if (!dst.is_cpu()) {
    // cpu -> neuron. A non-blocking copy from pinned memory is queued; otherwise the host
    // buffer may be reused as soon as copy_ returns, so copy now, after queued work on dst.
    const runtime::ModeledWork modeled = modeled_host_copy(static_cast<double>(dst.nbytes()));
    if (non_blocking && self.is_pinned()) {
      enqueue(index_of(dst), "aten::_copy_from", modeled, [src = self, out = DeviceView(dst)] {
        at::Tensor out_cpu = out.cpu();
        at::native::copy_(out_cpu, src, false);
      });
    } else {
      sync_current_stream(index_of(dst));
      // The host waits for the copy: it reuses its buffer as soon as copy_ returns.
      device_clock(index_of(dst))
          .host_wait(advance_clock(index_of(dst), "aten::_copy_from", modeled).end_s);
      if (!shapes_only()) {  // shape-only device memory is never written
        at::Tensor dst_cpu = cpu_alias(dst);
        at::native::copy_(dst_cpu, self, false);
      }
    }
  } else {
    // neuron -> cpu: a host read, which the host waits for.
    count_host_read();
    sync_current_stream(index_of(self));
    const runtime::ModeledWork modeled = modeled_host_copy(static_cast<double>(self.nbytes()));
    device_clock(index_of(self))
        .host_wait(advance_clock(index_of(self), "aten::_copy_from", modeled).end_s);
    at::Tensor dst_cpu = dst;
    at::native::copy_(dst_cpu, cpu_alias(self), false);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  VTRN_RECORD_OP("_copy_from_and_resize");
  resize(dst, c10::fromIntArrayRefSlow(self.sizes()), std::nullopt);
  return copy_from(self, dst, false);
}

// fill_'s conversion check on the CPU (a value the dtype cannot hold is an error), made on a
// scratch tensor here because the fill itself is queued. The CPU stores into a one-element
// tensor directly and fills any other size through TensorIterator, and the two check
// differently (a one-element float16 takes 1e6 as inf); the scratch tensor takes the same path.
void check_fill_value(const at::Tensor& self, const at::Scalar& value) {
  alignas(16) std::byte scratch[16];
  const int64_t numel = self.numel() == 1 ? 1 : 0;
  at::Tensor probe = at::from_blob(scratch, {numel}, at::TensorOptions().dtype(self.scalar_type()));
  at::native::fill_(probe, value);
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  VTRN_RECORD_OP("fill_.Scalar");
  check_fill_value(self, value);
  if (self.numel() == 0) return self;
  const double bytes = static_cast<double>(self.nbytes());
  run_kernel(index_of(self), "aten::fill_.Scalar", modeled_memory_kernel(bytes), HostCost{bytes},
             [out = DeviceView(self), value] {
               at::Tensor alias = out.cpu();
               at::native::fill_(alias, value);
             });
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  VTRN_RECORD_OP("fill_.Tensor");
  TORCH_CHECK(value.dim() == 0,
              "fill_ only supports a 0-dimension value tensor, but got a tensor with ", value.dim(),
              " dimensions.");
  if (self.numel() == 0) return self;
  if (value.is_cpu()) return fill_scalar(self, value.item());
  if (index_of(value) != index_of(self)) sync_current_stream(index_of(value));
  const double bytes = static_cast<double>(self.nbytes());
  run_kernel(index_of(self), "aten::fill_.Tensor", modeled_memory_kernel(bytes), HostCost{bytes},
             [out = DeviceView(self), v = DeviceView(value)] {
               at::Tensor alias = out.cpu();
               at::native::fill_(alias, v.cpu());
             });
  return self;
}

at::Tensor& zero(at::Tensor& self) {
  VTRN_RECORD_OP("zero_");
  if (self.numel() == 0) return self;
  const double bytes = static_cast<double>(self.nbytes());
  run_kernel(index_of(self), "aten::zero_", modeled_memory_kernel(bytes), HostCost{bytes},
             [out = DeviceView(self)] {
               at::Tensor alias = out.cpu();
               at::native::zero_(alias);
             });
  return self;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  VTRN_RECORD_OP("_local_scalar_dense");
  count_host_read();
  sync_current_stream(index_of(self));
  const runtime::ModeledWork modeled = modeled_host_copy(static_cast<double>(self.element_size()));
  device_clock(index_of(self))
      .host_wait(advance_clock(index_of(self), "aten::_local_scalar_dense", modeled).end_s);
  return at::native::_local_scalar_dense_cpu(cpu_alias(self));
}

// torch._assert_async: as on CUDA, the element count is checked at the call and the value on
// the stream, so the host does not wait; a false value raises the CPU kernel's error at the
// next synchronization point (at once under NEURON_LAUNCH_BLOCKING=1), as a device-side
// assert surfaces on CUDA.
void queue_assert(const at::Tensor& self, std::string message) {
  TORCH_CHECK(self.numel() != 0, "Boolean value of Tensor with no values is ambiguous");
  TORCH_CHECK(self.numel() < 2, "Boolean value of Tensor with more than one value is ambiguous");
  const double bytes = static_cast<double>(self.element_size());
  run_kernel(index_of(self), "aten::_assert_async", modeled_memory_kernel(bytes), HostCost{bytes},
             [in = DeviceView(self), message = std::move(message)] {
               at::Tensor alias = in.cpu();
               TORCH_CHECK(alias.is_nonzero(), message);
             });
}

void assert_async(const at::Tensor& self) {
  VTRN_RECORD_OP("_assert_async");
  queue_assert(self, "Expected Tensor with single nonzero value, but got zero");
}

void assert_async_msg(const at::Tensor& self, c10::string_view assert_msg) {
  VTRN_RECORD_OP("_assert_async.msg");
  queue_assert(self, assert_msg.empty() ? "Assertion is failed" : std::string(assert_msg));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_assert_async", assert_async);
  m.impl("_assert_async.msg", assert_async_msg);
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("view_as_real", view_as_real);
  m.impl("view_as_complex", view_as_complex);
  m.impl("unfold", unfold);
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
  m.impl("resize_", resize);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("set_", set_empty);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
  m.impl("record_stream", record_stream);
  m.impl("fill_.Scalar", fill_scalar);
  m.impl("fill_.Tensor", fill_tensor);
  m.impl("zero_", zero);
  m.impl("_local_scalar_dense", local_scalar_dense);
}

// vtrn::convert(self, dtype): a dtype conversion that is one lowered op on `neuron` (compiled
// graphs use it for _to_copy, which eager mode runs as a native copy); elsewhere, and for the
// CPU fallback, it is Tensor.to(dtype) (a copy, as _to_copy makes).
at::Tensor convert_anywhere(const at::Tensor& self, at::ScalarType dtype) {
  return self.to(dtype, /*non_blocking=*/false, /*copy=*/true);
}

// vtrn::fill(like, value) and vtrn::constant_pad(self, pad, value): full_like and
// constant_pad_nd as one lowered op each on `neuron`, for compiled graphs.
at::Tensor fill_anywhere(const at::Tensor& like, const at::Scalar& value) {
  return at::full_like(like, value, at::MemoryFormat::Contiguous);
}

at::Tensor constant_pad_anywhere(const at::Tensor& self, at::IntArrayRef pad,
                                 const at::Scalar& value) {
  return at::constant_pad_nd(self, pad, value);
}

TORCH_LIBRARY_FRAGMENT(vtrn, m) {
  m.def("convert(Tensor self, ScalarType dtype) -> Tensor");
  m.def("fill(Tensor like, Scalar value) -> Tensor");
  m.def("constant_pad(Tensor self, int[] pad, Scalar value) -> Tensor");
}

TORCH_LIBRARY_IMPL(vtrn, CompositeExplicitAutograd, m) {
  m.impl("convert", convert_anywhere);
  m.impl("fill", fill_anywhere);
  m.impl("constant_pad", constant_pad_anywhere);
}

// The dispatcher picks the Autograd key of the highest backend in the arguments, which for a
// cpu tensor and a neuron one is AutogradPrivateUse1: the op is CompositeImplicitAutograd, so
// that key must have the kernel too, or c10's answer would win there.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
}

// The copies handle the conjugate and negative bits themselves (the aliases carry them).
// Without this the Conjugate key's fallback would materialize the source through clone(),
// which copies through _copy_from again, forever.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace
}  // namespace vtrn::torch_adapter
