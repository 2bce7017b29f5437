// `custom_call @vtrn.aten_batch_norm` and `@vtrn.aten_batch_norm_backward`: torch's
// native_batch_norm and native_batch_norm_backward over float32 as ATen's CPU kernels compute
// them (batch_norm_kernel.cpp), so outputs, statistics, running statistics and gradients are the
// CPU's bits: its per-channel sums and its y = x * alpha + beta round otherwise than the ops'
// (HF ResNet's batch norms matched 6-60% of the elements, and MobileNetV2's training drifted
// by 0.04 from the CPU's).
//
//   aten_batch_norm: (x [N, C, *], weight [C]?, bias [C]?, running_mean [C]?, running_var [C]?)
//     -> (y [N, C, *], mean [C], invstd [C], new_running_mean [C]?, new_running_var [C]?)
//   backend_config "training=0|1;momentum=<number>;eps=<number>;weight=0|1;bias=0|1;running=0|1"
//   Training normalizes by the batch's statistics (mean, invstd; the running ones move by
//   momentum, the variance unbiased); evaluation by the running ones (mean and invstd are then
//   the running mean and 1 / sqrt(running_var + eps)).
//
//   aten_batch_norm_backward: (dy [N, C, *], x [N, C, *], weight [C]?, a [C], b [C])
//     -> (dx [N, C, *], dweight [C], dbias [C])
//   backend_config "training=0|1;eps=<number>;weight=0|1": a and b are the forward's saved mean
//   and invstd in training, the running mean and variance in evaluation.
//
// Every type float32. The torch layer installs ATen's kernels (runtime/aten_batch_norm.h);
// without them (the C++ tests, `vtrn hlo --run`) the executor computes the same formulas with
// sums in float64. The compiler prices a call as Vector-engine work over x.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenBatchNormTarget = "vtrn.aten_batch_norm";
inline constexpr std::string_view kAtenBatchNormBackwardTarget = "vtrn.aten_batch_norm_backward";

struct AtenBatchNormConfig {
  bool training = true;
  double momentum = 0.1;  ///< the forward's only
  double eps = 1e-5;
  bool weight = false;
  bool bias = false;     ///< the forward's only
  bool running = false;  ///< the forward's only
};

/// The forward's (|backward| false) or the backward's backend_config.
std::string aten_batch_norm_config(const AtenBatchNormConfig& config, bool backward);
/// nullopt when |text| is not one aten_batch_norm_config(_, backward) writes.
std::optional<AtenBatchNormConfig> parse_aten_batch_norm_config(std::string_view text,
                                                                bool backward);

struct AtenBatchNormShape {
  AtenBatchNormConfig config;
  bool backward = false;
  std::int64_t batch = 0, channels = 0, per_channel = 0;  ///< N, C and the product of *
};
/// Whether |op| calls either kernel.
bool is_aten_batch_norm(const hlo::Op& op);
/// The call's config and shape; throws hlo::Error naming what is wrong when its backend_config,
/// operands or results do not fit the forms above.
AtenBatchNormShape aten_batch_norm_shape(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
