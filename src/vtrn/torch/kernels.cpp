// The native ATen kernels of the `neuron` device and the CPU fallback for every other op.
//
// Device memory is host memory, so each kernel runs PyTorch's CPU implementation on a CPU
// tensor that aliases the device bytes (no copy). Later issues replace these with lowered,
// compiled and queued executables.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_copy_from_and_resize_native.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/zero_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "vtrn/torch/op_tracking.h"

namespace vtrn::torch_adapter {
namespace {

// Records the op once per tracking epoch; |name| must be a string literal.
#define VTRN_RECORD_OP(name)                                      \
    do {                                                          \
        static std::atomic<uint64_t> vtrn_seen_epoch{0};          \
        record_executed("aten::" name, vtrn_seen_epoch);          \
    } while (false)

/// A CPU tensor over the same bytes as |t| (device memory is host memory).
at::Tensor cpu_alias(const at::Tensor& t) {
    return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
}

void check_neuron_factory_args(c10::Device device, std::optional<c10::Layout> layout,
                               std::optional<bool> pin_memory) {
    TORCH_CHECK(device.is_privateuseone(), "Expected neuron device, got ", device.str());
    TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
                "neuron tensors must be strided; got layout ", c10::layout_or_default(layout),
                ". Create the tensor on cpu, or use torch.strided.");
    TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory),
                "pin_memory=True applies to cpu tensors only; a neuron tensor is device memory. "
                "Pin the cpu tensor you copy from instead.");
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
    VTRN_RECORD_OP("empty.memory_format");
    const c10::Device target = c10::device_or_default(device);
    check_neuron_factory_args(target, layout, pin_memory);
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
    check_neuron_factory_args(target, layout, pin_memory);
    const c10::DeviceGuard guard(target);
    return at::detail::empty_strided_generic(size, stride, at::GetAllocator(at::kPrivateUse1),
                                             c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                             c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size,
                      c10::SymIntArrayRef stride, std::optional<c10::SymInt> storage_offset) {
    VTRN_RECORD_OP("as_strided");
    return at::cpu::as_strided_symint(self, size, stride, std::move(storage_offset));
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
    VTRN_RECORD_OP("view");
    return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
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
    const c10::DeviceGuard guard(self.device());
    return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), memory_format);
}

// Every copy that has a neuron side lands here: neuron->neuron, cpu->neuron, neuron->cpu.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
    VTRN_RECORD_OP("_copy_from");
    TORCH_CHECK(self.defined() && dst.defined(), "_copy_from: source and destination must be defined");
    if (self.numel() == 0) return dst;
    at::Tensor dst_cpu = dst.is_cpu() ? dst : cpu_alias(dst);
    const at::Tensor src_cpu = self.is_cpu() ? self : cpu_alias(self);
    at::native::copy_(dst_cpu, src_cpu, non_blocking);
    return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
    VTRN_RECORD_OP("_copy_from_and_resize");
    at::native::resize_(dst, self.sizes(), std::nullopt);
    return copy_from(self, dst, false);
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

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
    VTRN_RECORD_OP("fill_.Scalar");
    if (self.numel() == 0) return self;
    at::Tensor alias = cpu_alias(self);
    at::native::fill_(alias, value);
    return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
    VTRN_RECORD_OP("fill_.Tensor");
    TORCH_CHECK(value.dim() == 0, "fill_ only supports a 0-dimension value tensor, but got a tensor with ",
                value.dim(), " dimensions.");
    if (self.numel() == 0) return self;
    const at::Tensor value_cpu = value.is_cpu() ? value : cpu_alias(value);
    at::Tensor alias = cpu_alias(self);
    at::native::fill_(alias, value_cpu);
    return self;
}

at::Tensor& zero(at::Tensor& self) {
    VTRN_RECORD_OP("zero_");
    if (self.numel() == 0) return self;
    at::Tensor alias = cpu_alias(self);
    at::native::zero_(alias);
    return self;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
    VTRN_RECORD_OP("_local_scalar_dense");
    return at::native::_local_scalar_dense_cpu(cpu_alias(self));
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    record_fallback(c10::toString(op.operator_name()));
    at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("empty.memory_format", empty_memory_format);
    m.impl("empty_strided", empty_strided);
    m.impl("as_strided", as_strided);
    m.impl("view", view);
    m.impl("_reshape_alias", reshape_alias);
    m.impl("resize_", resize);
    m.impl("_copy_from", copy_from);
    m.impl("_copy_from_and_resize", copy_from_and_resize);
    m.impl("set_.source_Tensor", set_source_tensor);
    m.impl("set_.source_Storage", set_source_storage);
    m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
    m.impl("fill_.Scalar", fill_scalar);
    m.impl("fill_.Tensor", fill_tensor);
    m.impl("zero_", zero);
    m.impl("_local_scalar_dense", local_scalar_dense);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
    m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

}  // namespace
}  // namespace vtrn::torch_adapter
