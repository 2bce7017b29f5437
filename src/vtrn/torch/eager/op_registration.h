// Which ATen ops the `neuron` device runs natively.
//
// Promises: every op in the lowering registry has the lowered kernel for PrivateUse1 (aten ops
// in the aten namespace, vtrn's own ops in the vtrn namespace); native_ops() lists every aten op
// with a PrivateUse1 kernel, lowered or runtime, sorted by name.
#pragma once

#include <string>
#include <tuple>
#include <vector>

namespace vtrn::torch_adapter {

/// Every ATen op with a PrivateUse1 kernel: (name, dtypes, "lowered" | "runtime").
std::vector<std::tuple<std::string, std::vector<std::string>, std::string>> native_ops();

}  // namespace vtrn::torch_adapter
