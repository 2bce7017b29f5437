#include "vtrn/compiler/aten_gelu.h"

#include <string>

#include "vtrn/compiler/backend_config.h"

namespace vtrn::compiler {

bool is_aten_gelu(const hlo::Op& op) {
  if (op.kind != hlo::OpKind::kCustomCall) return false;
  const std::string& t = op.call_target_name;
  return t == kAtenGeluTarget || t == kAtenGeluBackwardTarget || t == kAtenGeluTanhTarget ||
         t == kAtenGeluTanhBackwardTarget;
}

std::int64_t aten_gelu_elements(const hlo::Block& b, const hlo::Op& op) {
  const bool backward = op.call_target_name == kAtenGeluBackwardTarget ||
                        op.call_target_name == kAtenGeluTanhBackwardTarget;
  const std::string what = "custom_call @" + op.call_target_name;
  const std::size_t operands = backward ? 2 : 1;
  bool ok = op.operands.size() == operands && op.results.size() == 1;
  if (ok) {
    const hlo::TensorType& out = b.type(op.results[0]);
    ok = out.dtype == hlo::DType::kF32;
    for (int v : op.operands) ok = ok && b.type(v) == out;
  }
  if (!ok)
    throw hlo::Error(what + " takes " + (backward ? "(dy, x)" : "(x)") +
                     " and gives one result, all float32 of one shape; got " + call_types(b, op));
  return b.type(op.results[0]).num_elements();
}

}  // namespace vtrn::compiler
