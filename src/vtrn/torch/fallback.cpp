// The CPU fallback of `neuron` (see fallback.h), registered for every op without a native
// kernel.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/fallback.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_copy_from_and_resize.h>
#include <torch/library.h>

#include "vtrn/torch/cpu_call.h"
#include "vtrn/torch/device.h"
#include "vtrn/torch/device_check.h"
#include "vtrn/torch/eager/metrics.h"
#include "vtrn/torch/op_tracking.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {
namespace {

bool fallback_is_error() {
  static const bool value = [] {
    const char* v = std::getenv("VTRN_FALLBACK");
    return v != nullptr && std::strcmp(v, "error") == 0;
  }();
  return value;
}

template <typename Fn>
void for_each_tensor_arg(const torch::jit::Stack& stack, size_t first, size_t count, Fn fn) {
  for (size_t i = first; i < first + count; ++i) {
    const c10::IValue& value = stack[i];
    if (value.isTensor()) {
      fn(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList()) fn(t);
    } else if (value.isOptionalTensorList()) {
      for (const std::optional<at::Tensor>& t : value.toOptionalTensorList()) {
        if (t.has_value()) fn(*t);
      }
    }
  }
}

void warn_float64_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    TORCH_WARN(
        "neuron computes float64 as float32 and stores the result as float64, as Trainium does: "
        "expect "
        "float32 precision. Use float32 explicitly to silence this warning.");
  });
}

/// Ops that read a float64 tensor's bits and do no float arithmetic (hash_tensor): float32
/// stand-ins would change the answer itself, not its precision, so they run on the real values.
bool reads_bits(const c10::OperatorHandle& op) { return op.schema().name() == "aten::hash_tensor"; }

bool is_foreach(const c10::OperatorHandle& op) {
  return op.schema().name().rfind("aten::_foreach_", 0) == 0;
}

bool is_scalar_list(const c10::IValue& v) { return v.isList() && !v.isTensorList(); }

/// The length every tensor list and Scalar list argument of a foreach op shares, or nullopt
/// when they differ (the CPU kernel raises PyTorch's error for that).
std::optional<size_t> shared_list_length(const torch::jit::Stack& stack, size_t first,
                                         size_t count) {
  std::optional<size_t> length;
  for (size_t i = first; i < first + count; ++i) {
    const c10::IValue& v = stack[i];
    if (!v.isTensorList() && !is_scalar_list(v)) continue;
    const size_t n = v.isTensorList() ? v.toTensorList().size() : v.toListRef().size();
    if (length && *length != n) return std::nullopt;
    length = n;
  }
  return length;
}

/// A foreach op whose lists span devices runs index by index, as CUDA's slow path does: each
/// index is a one-element call of the same op, so each is checked (and lowered) on its own.
void foreach_by_index(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t first,
                      size_t count, size_t length) {
  const size_t num_returns = op.schema().returns().size();
  std::vector<std::vector<at::Tensor>> returned(num_returns);
  for (size_t i = 0; i < length; ++i) {
    torch::jit::Stack call;
    for (size_t a = first; a < first + count; ++a) {
      const c10::IValue& v = (*stack)[a];
      if (v.isTensorList()) {
        call.emplace_back(c10::List<at::Tensor>({v.toTensorList().get(i)}));
      } else if (is_scalar_list(v)) {
        c10::impl::GenericList one(v.toList().elementType());
        one.push_back(v.toList().get(i));
        call.emplace_back(std::move(one));
      } else {
        call.push_back(v);
      }
    }
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), &call);
    for (size_t r = 0; r < num_returns; ++r) {
      const c10::IValue& v = call[call.size() - num_returns + r];
      if (v.isTensorList())
        for (const at::Tensor& t : v.toTensorList()) returned[r].push_back(t);
    }
  }
  torch::jit::drop(*stack, count);
  for (auto& tensors : returned) stack->emplace_back(c10::List<at::Tensor>(std::move(tensors)));
}

// The *_overrideable convolution ops exist only for backends like this one: their CPU kernels
// raise. On the CPU the same call is aten::convolution (the same arguments) and
// aten::convolution_backward (which also takes the bias's sizes, here the number of output
// channels, the size of grad_output's dim 1).
const c10::OperatorHandle& cpu_equivalent(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                                          size_t first) {
  const c10::OperatorName& name = op.operator_name();
  if (name.name == "aten::convolution_overrideable") {
    static const c10::OperatorHandle conv =
        c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution", "");
    return conv;
  }
  if (name.name == "aten::convolution_backward_overrideable") {
    static const c10::OperatorHandle backward =
        c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution_backward", "");
    const at::Tensor& grad_output = (*stack)[first].toTensor();
    const std::vector<int64_t> bias_sizes{grad_output.dim() > 1 ? grad_output.size(1) : 0};
    stack->insert(stack->begin() + static_cast<std::ptrdiff_t>(first) + 3, c10::IValue(bias_sizes));
    return backward;
  }
  return op;
}

}  // namespace

void cpu_fallback(const c10::OperatorHandle& original, torch::jit::Stack* stack) {
  {
    const size_t n = original.schema().arguments().size();
    const size_t at = stack->size() - n;
    if (is_foreach(original)) {
      const std::optional<size_t> length = shared_list_length(*stack, at, n);
      if (length && *length > 1 && spans_devices(*stack, at, n))
        return foreach_by_index(original, stack, at, n, *length);
      if (length) check_same_device(original, *stack, at);
    } else {
      check_same_device(original, *stack, at);
    }
  }
  count_fallback();
  const std::string name = c10::toString(original.operator_name());
  TORCH_CHECK_NOT_IMPLEMENTED(
      !fallback_is_error(), "CPU fallback is disabled for operation=", name,
      ": VTRN_FALLBACK=error makes an op without a native neuron implementation an error. "
      "Unset VTRN_FALLBACK to run it on the CPU.");
  const size_t original_args = original.schema().arguments().size();
  const c10::OperatorHandle& op = cpu_equivalent(original, stack, stack->size() - original_args);
  const size_t num_args = op.schema().arguments().size();
  const size_t first = stack->size() - num_args;
  // The CPU reads device memory directly: wait for the work that produces the inputs.
  bool has_wide = false;
  bool f64 = false, f32 = false, c128 = false, c64 = false;  // dtypes of the tensors
  std::vector<c10::DeviceIndex> devices;
  for_each_tensor_arg(*stack, first, num_args, [&](const at::Tensor& t) {
    if (!t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number()) return;
    const at::ScalarType d = t.scalar_type();
    f64 = f64 || d == at::kDouble;
    f32 = f32 || d == at::kFloat;
    c128 = c128 || d == at::kComplexDouble;
    c64 = c64 || d == at::kComplexFloat;
    if (!t.is_privateuseone()) return;
    const c10::DeviceIndex device = t.device().index();
    if (std::find(devices.begin(), devices.end(), device) == devices.end())
      devices.push_back(device);
    has_wide = has_wide || d == at::kDouble || d == at::kComplexDouble;
  });
  for (c10::DeviceIndex d : devices) sync_current_stream(d);
  record_fallback(name);
  // Shape-only execution computes nothing: the op's shape function gives its returns.
  if (shapes_only() && call_meta_kernel(op, stack)) return;
  if (!has_wide) {
    // float64 results computed from narrower inputs (the default dtype's promotions) are
    // rounded as if computed in float32.
    call_cpu_kernel(op, stack, {.round_results = true});
    return;
  }
  if (reads_bits(op)) {
    call_cpu_kernel(op, stack, {});
    return;
  }
  warn_float64_once();
  // The stand-ins change the dtypes the CPU kernel sees, so the CPU's result dtypes come from
  // elsewhere. When every float tensor is float64 (complex, complex128) the stand-ins keep
  // the relations between dtypes that the CPU kernel checks, and the op's shape function gives
  // the dtypes; an op without one, or whose shape function rejects the call, runs in its own
  // dtypes (the CPU kernel decides, and raises its error when the call is invalid). A call
  // that mixes float64 with float32 (lerp(float64, float32), an out= of the other one) is
  // checked, and typed, by the CPU kernel on copies in the real dtypes first.
  std::optional<ReturnDtypes> dtypes;
  const bool checked = (f64 && f32) || (c128 && c64);
  if (checked)
    dtypes = cpu_return_dtypes(op, *stack);
  else
    dtypes = meta_return_dtypes(op, *stack);
  if (!dtypes || checked) {
    call_cpu_kernel(op, stack, {.stand_in_returns = dtypes ? &*dtypes : nullptr});
    return;
  }
  const torch::jit::Stack arguments(stack->end() - static_cast<std::ptrdiff_t>(num_args),
                                    stack->end());
  try {
    call_cpu_kernel(op, stack, {.stand_in_returns = &*dtypes});
  } catch (const c10::Error&) {
    // A shape function that accepts what the CPU kernel refuses (clamp.out of a half into a
    // float64 out=): the CPU kernel on copies in the real dtypes raises the CPU's own error,
    // which names Double where the stand-ins' would name Float.
    cpu_return_dtypes(op, arguments);
    throw;
  }
}

namespace {

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

// CompositeExplicitAutograd kernels that accept only the devices ATen has a kernel for
// ("mode only supports CPU, CUDA and XPU device type") would win over the fallback above:
// these ops take the fallback explicitly, so that they run as on the CPU. ldexp's composite
// has an exact kernel (std::ldexp) on the CPU and CUDA only; elsewhere it multiplies by
// pow(2, exponent) in the mantissa's dtype, where 2^20 is already inf in half.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* op : {"mode", "mode.values", "ldexp.Tensor", "ldexp.out", "ldexp_"})
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

}  // namespace
}  // namespace vtrn::torch_adapter
