// `custom_call @vtrn.aten_conv2d`: a float32 2-D convolution with its bias, as torch's CPU
// convolution computes it. ATen hands a float32 convolution to oneDNN (or its own im2col and
// gemm), whose blocked accumulation no order of the executor's products reproduces (10% of the
// elements matched), and which adds the bias inside the kernel where it takes a 1x1 window.
//
//   (x [N, C, H, W], w [O, C / groups, KH, KW][, b [O]]) -> y [N, O, OH, OW]
//
// every type float32; backend_config
// "stride=<sh>,<sw>;padding=<ph>,<pw>;dilation=<dh>,<dw>;groups=<g>;bias=0|1", the padding on both
// sides of each dim, OH = (H + 2 ph - dh (KH - 1) - 1) / sh + 1 (likewise OW).
//
// The torch layer installs ATen's convolution (runtime/aten_conv2d.h); without it (the C++
// tests, `vtrn hlo --run`) the executor runs aten_conv2d_ops(), the stablehlo.convolution and
// bias add the call stands for, which the compiler also prices it as.
//
// Its backward, `custom_call @vtrn.aten_conv2d_backward`, runs ATen's convolution_backward:
//
//   (dy [N, O, OH, OW], x [N, C, H, W], w [O, C / groups, KH, KW]) -> (dx, dw, db [O])
//
// backend_config the forward's, then ";grads=<dx><dw><db>" (each 0 or 1): the gradients
// wanted; the others are zeros. Without the installed kernel the executor sums them directly in
// float64. The compiler prices it as two convolutions of the forward's size (the input gradient
// is a transposed convolution, the weight gradient a correlation, each with the forward's
// FLOPs) and the bias gradient's reduction.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/cost/kernel_cost.h"
#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenConv2dTarget = "vtrn.aten_conv2d";

struct AtenConv2dConfig {
  std::array<std::int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  std::int64_t groups = 1;
  bool bias = false;
};

std::string aten_conv2d_config(const AtenConv2dConfig& config);
/// nullopt when |text| is not one aten_conv2d_config() writes, or a stride, dilation or the
/// groups are below 1 or a padding below 0.
std::optional<AtenConv2dConfig> parse_aten_conv2d_config(std::string_view text);

/// The output's spatial size for |x| and |w| of the form above.
std::array<std::int64_t, 2> aten_conv2d_output_size(const AtenConv2dConfig& config,
                                                    const hlo::TensorType& x,
                                                    const hlo::TensorType& w);

/// Whether |op| is a call of the kernel.
bool is_aten_conv2d(const hlo::Op& op);
/// The call's config; throws hlo::Error naming what is wrong when its backend_config, operands
/// or result do not fit the form above.
AtenConv2dConfig aten_conv2d_checked(const hlo::Block& b, const hlo::Op& op);

/// The ops the call stands for: the convolution of x with w, and the bias added.
hlo::Value aten_conv2d_ops(hlo::Builder& b, hlo::Value x, hlo::Value w,
                           std::optional<hlo::Value> bias, const AtenConv2dConfig& config);

/// The call's modeled cost: its ops' (compiler/ops_cost.h).
cost::KernelCost aten_conv2d_cost(const hlo::Block& b, const hlo::Op& op,
                                  const cost::CostModel& model);

inline constexpr std::string_view kAtenConv2dBackwardTarget = "vtrn.aten_conv2d_backward";

struct AtenConv2dBackwardConfig {
  AtenConv2dConfig forward;                     ///< its bias flag unused
  std::array<bool, 3> grads{true, true, true};  ///< dx, dw, db
};

std::string aten_conv2d_backward_config(const AtenConv2dBackwardConfig& config);
std::optional<AtenConv2dBackwardConfig> parse_aten_conv2d_backward_config(std::string_view text);

bool is_aten_conv2d_backward(const hlo::Op& op);
/// The call's config; throws hlo::Error naming what is wrong when its backend_config, operands
/// or results do not fit the form above.
AtenConv2dBackwardConfig aten_conv2d_backward_checked(const hlo::Block& b, const hlo::Op& op);
/// The backward call's modeled cost, as above.
cost::KernelCost aten_conv2d_backward_cost(const hlo::Block& b, const hlo::Op& op,
                                           const cost::CostModel& model);

}  // namespace vtrn::compiler
