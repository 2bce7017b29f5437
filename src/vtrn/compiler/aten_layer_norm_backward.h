// `custom_call @vtrn.aten_layer_norm_backward`: native_layer_norm_backward over float32 rows as
// ATen's CPU kernel computes it (layer_norm_kernel.cpp's LayerNormBackwardKernelImplInternal),
// so the input, weight and bias gradients are the CPU's bits: the weight and bias gradients sum
// over rows in per-thread partial sums that any other order rounds otherwise.
//
//   (dy [rows, n], x [rows, n], mean [rows], rstd [rows], gamma [n]?)
//     -> (dx [rows, n], dgamma [n], dbeta [n])
//
// every type float32; backend_config "gamma=0|1;beta=0|1": whether the forward had gamma (an
// operand; it scales dy) and beta. dgamma is zero without gamma and dbeta without beta (the
// forward had no such parameter).
//
// The torch layer installs ATen's kernel (runtime/aten_layer_norm_backward.h); without it (the
// C++ tests, `vtrn hlo --run`) the executor computes the same formula with sums in float64. The
// compiler prices a call as Vector-engine work over x (the row sums and the three outputs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenLayerNormBackwardTarget = "vtrn.aten_layer_norm_backward";

struct AtenLayerNormBackwardConfig {
  bool gamma = false;
  bool beta = false;
};

std::string aten_layer_norm_backward_config(const AtenLayerNormBackwardConfig& config);
/// nullopt when |text| is not one aten_layer_norm_backward_config() writes.
std::optional<AtenLayerNormBackwardConfig> parse_aten_layer_norm_backward_config(
    std::string_view text);

struct AtenLayerNormBackwardShape {
  AtenLayerNormBackwardConfig config;
  std::int64_t rows = 0, n = 0;
};
/// Whether |op| is a call of the kernel.
bool is_aten_layer_norm_backward(const hlo::Op& op);
/// The call's config and row shape; throws hlo::Error naming what is wrong when its
/// backend_config, operands or results do not fit the form above.
AtenLayerNormBackwardShape aten_layer_norm_backward_shape(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
