// `custom_call @vtrn.aten_softmax`: torch's float32 softmax and log_softmax over the last dim,
// and their backwards, as ATen's CPU kernels compute them (SoftMaxKernel.cpp's lastdim
// kernels), so the results are the CPU's bits whatever the thread count: the softmax
// backward's rows as a formula of ops matched the CPU's at two threads but 97-99% of the
// elements at one. The kernels are also faster than the ops on the host (the cross-entropy
// loss's log_softmax backward took 2.2x the CPU's time).
//
//   forward:  (x [rows, n]) -> y [rows, n]
//   backward: (grad_output [rows, n], output [rows, n]) -> grad_input [rows, n]
//
// every type float32; backend_config "log=0|1;backward=0|1". The torch layer installs ATen's
// kernels (runtime/aten_softmax.h); without them (the C++ tests, `vtrn hlo --run`) the executor
// computes the formulas with float64 sums. The compiler prices a call as an exp per element
// (the backward of softmax has none) on the Scalar engine and the row passes on the Vector
// engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenSoftmaxTarget = "vtrn.aten_softmax";

struct AtenSoftmaxConfig {
  bool log = false;
  bool backward = false;
};

std::string aten_softmax_config(const AtenSoftmaxConfig& config);
/// nullopt when |text| is not one aten_softmax_config() writes.
std::optional<AtenSoftmaxConfig> parse_aten_softmax_config(std::string_view text);

struct AtenSoftmaxShape {
  AtenSoftmaxConfig config;
  std::int64_t rows = 0, n = 0;
};
/// Whether |op| is a call of the kernel.
bool is_aten_softmax(const hlo::Op& op);
/// The call's config and shape; throws hlo::Error naming what is wrong when its backend_config,
/// operands or result do not fit the form above.
AtenSoftmaxShape aten_softmax_shape(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
