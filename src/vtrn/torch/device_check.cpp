#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/device_check.h"

#include <optional>
#include <string_view>

#include <ATen/core/Tensor.h>

namespace vtrn::torch_adapter {
namespace {

// Ops whose tensors may be on several devices on CUDA too (their native_functions.yaml entry
// says `device_check: NoCheck` and no TensorIterator checks them): copies between devices and
// indexing with CPU indices. Every overload of each.
bool may_mix_devices(std::string_view name) {
  constexpr std::string_view kAten = "aten::";
  if (name.substr(0, kAten.size()) != kAten) return true;  // c10d::, vtrn::, ... check their own
  name.remove_prefix(kAten.size());
  for (std::string_view op :
       {"copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to", "_foreach_copy_",
        "_foreach_copy", "index", "_unsafe_index", "index_put", "index_put_", "_unsafe_index_put",
        "_index_put_impl_", "set_", "is_set_to", "_has_compatible_shallow_copy_type"}) {
    if (name == op) return true;
  }
  return false;
}

/// Calls |fn(tensor, written)| for each defined tensor of the arguments: the written ones
/// first (TensorIterator's outputs), then the others.
template <typename Fn>
void for_each_tensor(const c10::FunctionSchema& schema, const torch::jit::Stack& stack,
                     size_t first, Fn fn) {
  const auto& args = schema.arguments();
  for (const bool pass_written : {true, false}) {
    for (size_t i = 0; i < args.size(); ++i) {
      const bool written = args[i].alias_info() != nullptr && args[i].alias_info()->isWrite();
      if (written != pass_written) continue;
      const c10::IValue& v = stack[first + i];
      if (v.isTensor()) {
        if (v.toTensor().defined()) fn(v.toTensor(), written);
      } else if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorList())
          if (t.defined()) fn(t, written);
      } else if (v.isOptionalTensorList()) {
        for (const std::optional<at::Tensor>& t : v.toOptionalTensorList())
          if (t.has_value() && t->defined()) fn(*t, written);
      }
    }
  }
}

}  // namespace

void check_same_device(const c10::OperatorHandle& op, const torch::jit::Stack& stack,
                       size_t first) {
  const c10::FunctionSchema& schema = op.schema();
  if (may_mix_devices(schema.name())) return;
  std::optional<c10::Device> common;
  for_each_tensor(schema, stack, first, [&](const at::Tensor& t, bool) {
    if (!common && !t.is_cpu()) common = t.device();
  });
  if (!common) return;
  for_each_tensor(schema, stack, first, [&](const at::Tensor& t, bool written) {
    if (t.device() == *common || (t.is_cpu() && t.dim() == 0 && !written)) return;
    TORCH_CHECK(false,
                "Expected all tensors to be on the same device, but found at least two devices, ",
                *common, " and ", t.device(), "!");
  });
}

bool spans_devices(const torch::jit::Stack& stack, size_t first, size_t count) {
  std::optional<c10::Device> seen;
  bool several = false;
  auto visit = [&](const at::Tensor& t) {
    if (!t.defined() || t.is_cpu()) return;
    if (!seen)
      seen = t.device();
    else if (*seen != t.device())
      several = true;
  };
  for (size_t i = first; i < first + count; ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      visit(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) visit(t);
    }
  }
  return several;
}

}  // namespace vtrn::torch_adapter
