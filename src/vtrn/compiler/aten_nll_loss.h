// `custom_call @vtrn.aten_nll_loss`: nll_loss_forward with a mean or sum reduction, the loss
// summed as ATen's CPU kernel (LossNLL.cpp's nll_loss_out_frame) sums it: sample by sample in
// the input's own type, through eight levels of partial sums that carry every 16 samples one
// level up, then the levels added in order and (mean) divided by the total weight. Any other
// order rounds otherwise, and the loss is the first number a training script prints.
//
//   (x [N, C], target [N] int64[, weight [C]]) -> (output [], total_weight [])
//
// x float32 or bfloat16 (float64 computes as float32, the module of ops); weight and both
// results of x's type. A sample whose target is
// ignore_index adds nothing; the executor throws ATen's error ("Target 7 is out of bounds.")
// for any other target outside [0, C). backend_config "ignore_index=<integer>;mean=0|1".
//
// The compiler prices a call as a Vector-engine pass over the N picked values; the executor
// runs it on the host (runtime/aten_nll_loss.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenNllLossTarget = "vtrn.aten_nll_loss";

struct AtenNllLossConfig {
  std::int64_t ignore_index = -100;
  bool mean = true;  ///< else the sum
};

std::string aten_nll_loss_config(const AtenNllLossConfig& config);
/// nullopt when |text| is not one aten_nll_loss_config() writes.
std::optional<AtenNllLossConfig> parse_aten_nll_loss_config(std::string_view text);

struct AtenNllLossShape {
  AtenNllLossConfig config;
  std::int64_t samples = 0, classes = 0;
  hlo::DType dtype = hlo::DType::kF32;
  bool weighted = false;
};
/// Whether |op| is a call of the kernel.
bool is_aten_nll_loss(const hlo::Op& op);
/// The call's config and shape; throws hlo::Error naming what is wrong when its backend_config,
/// operands or results do not fit the form above.
AtenNllLossShape aten_nll_loss_shape(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
