// Registers the lowered kernel for every op in the lowering registry, and lists every op the
// device implements natively.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/eager/op_registration.h"

#include <algorithm>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "vtrn/torch/eager/lowered_kernel.h"
#include "vtrn/torch/lowering/lowering.h"

namespace vtrn::torch_adapter {

namespace {

using hlo::DType;

bool is_vtrn_op(const lowering::OpLowering& e) { return e.name.rfind("vtrn::", 0) == 0; }

// The lowering that computes the result of an ATen kernel made of lowered ops ("" if none).
std::string composed_of(const std::string& name) {
  if (name == "native_batch_norm") return "vtrn::batch_norm";
  if (name == "nonzero" || name == "nonzero.out") return "nonzero_static";
  if (name == "masked_select" || name == "masked_select.out") return "index.Tensor";
  if (name == "bincount") return "index_add";
  return "";
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const lowering::OpLowering& e : lowering::registry())
    if (!is_vtrn_op(e)) m.impl(e.name.c_str(), eager::lowered_kernel(e));
}

// vtrn's own ops (attention.cpp defines them): kernels the ATen ops of this device call.
TORCH_LIBRARY_IMPL(vtrn, PrivateUse1, m) {
  for (const lowering::OpLowering& e : lowering::registry())
    if (is_vtrn_op(e)) m.impl(e.name.substr(6).c_str(), eager::lowered_kernel(e));
}

}  // namespace

std::vector<std::tuple<std::string, std::vector<std::string>, std::string>> native_ops() {
  std::vector<std::tuple<std::string, std::vector<std::string>, std::string>> out;
  for (const c10::OperatorName& op :
       c10::Dispatcher::singleton().getRegistrationsForDispatchKey(c10::DispatchKey::PrivateUse1)) {
    if (op.name.rfind("aten::", 0) != 0) continue;
    const std::string name =
        op.name.substr(6) + (op.overload_name.empty() ? "" : "." + op.overload_name);
    // An ATen kernel that runs lowered ops (batch_norm.cpp, mask_kernels.cpp) is lowered too,
    // for the dtypes of the lowering that computes its result.
    const lowering::OpLowering* e = lowering::find_lowering(name);
    if (e == nullptr) e = lowering::find_lowering(composed_of(name));
    if (e != nullptr) {
      std::vector<std::string> dtypes;
      for (DType d : e->dtypes) {
        // bincount counts integers (its index_add_ takes the weights, of other dtypes).
        if (name == "bincount" && !hlo::is_integer(d)) continue;
        dtypes.push_back(lowering::torch_dtype_name(d));
      }
      out.emplace_back(name, std::move(dtypes), "lowered");
    } else {
      // Runtime kernels (allocation, copies, views, fill, random numbers) move or fill bytes
      // of every dtype the device stores.
      out.emplace_back(
          name,
          std::vector<std::string>{"float32", "bfloat16", "float16", "float64", "int64", "int32",
                                   "int16", "int8", "uint8", "bool", "complex64"},
          "runtime");
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace vtrn::torch_adapter
