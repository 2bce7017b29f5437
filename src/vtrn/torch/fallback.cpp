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
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_copy_from_and_resize.h>
#include <torch/library.h>

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
void for_each_tensor_arg(torch::jit::Stack* stack, size_t first, size_t count, Fn fn) {
  for (size_t i = first; i < first + count; ++i) {
    c10::IValue& value = (*stack)[i];
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

// Trainium has no float64 arithmetic: float64 inputs are computed as float32 and the results
// stored back as float64. Mutated float64 arguments get the float32 result written back.
void fallback_as_float32(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t first) {
  const auto& arguments = op.schema().arguments();
  std::vector<std::pair<at::Tensor, at::Tensor>> written;  // (float64 original, float32 stand-in)
  for (size_t i = 0; i < arguments.size(); ++i) {
    c10::IValue& value = (*stack)[first + i];
    if (!value.isTensor()) continue;
    const at::Tensor& t = value.toTensor();
    if (!t.defined() || t.is_cpu() || t.scalar_type() != at::kDouble) continue;
    at::Tensor stand_in = t.to(at::kFloat);
    const auto* alias = arguments[i].alias_info();
    if (alias != nullptr && alias->isWrite()) written.emplace_back(t, stand_in);
    value = stand_in;
  }
  at::native::cpu_fallback(op, stack);
  // An out= argument takes the shape the op gave its stand-in (arange, linspace and eye
  // resize theirs), as cpu_fallback resizes the outputs it copies back.
  for (auto& [original, stand_in] : written) at::_copy_from_and_resize(stand_in, original);
  const size_t returns = op.schema().returns().size();
  for (size_t i = stack->size() - returns; i < stack->size(); ++i) {
    c10::IValue& value = (*stack)[i];
    if (!value.isTensor()) continue;
    const at::Tensor& t = value.toTensor();
    bool replaced = false;
    for (auto& [original, stand_in] : written) {
      if (t.is_same(stand_in)) {
        value = original;
        replaced = true;
        break;
      }
    }
    if (!replaced && t.defined() && t.scalar_type() == at::kFloat) value = t.to(at::kDouble);
  }
}

}  // namespace

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  count_fallback();
  const std::string name = c10::toString(op.operator_name());
  TORCH_CHECK_NOT_IMPLEMENTED(
      !fallback_is_error(), "CPU fallback is disabled for operation=", name,
      ": VTRN_FALLBACK=error makes an op without a native neuron implementation an error. "
      "Unset VTRN_FALLBACK to run it on the CPU.");
  const size_t num_args = op.schema().arguments().size();
  const size_t first = stack->size() - num_args;
  // The CPU reads device memory directly: wait for the work that produces the inputs.
  bool has_float64 = false;
  std::vector<c10::DeviceIndex> devices;
  for_each_tensor_arg(stack, first, num_args, [&](const at::Tensor& t) {
    if (!t.defined() || t.is_cpu()) return;
    const c10::DeviceIndex device = t.device().index();
    if (std::find(devices.begin(), devices.end(), device) == devices.end())
      devices.push_back(device);
    has_float64 = has_float64 || t.scalar_type() == at::kDouble;
  });
  for (c10::DeviceIndex d : devices) sync_current_stream(d);
  record_fallback(name);
  if (has_float64) {
    warn_float64_once();
    fallback_as_float32(op, stack, first);
  } else {
    at::native::cpu_fallback(op, stack);
  }
}

namespace {

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

}  // namespace
}  // namespace vtrn::torch_adapter
