// `custom_call @vtrn.aten_group_norm` and `@vtrn.aten_group_norm_backward`: torch's
// native_group_norm and its backward over float32 as ATen's CPU kernels compute them
// (group_norm_kernel.cpp), so outputs, statistics and gradients are the CPU's bits: its
// per-group moments and per-channel sums round otherwise than the ops' (HF wav2vec2's group
// norm matched 12-66% of the elements).
//
//   aten_group_norm: (x [N, C, *], weight [C]?, bias [C]?) -> (y [N, C, *], mean [N, G],
//     rstd [N, G]); backend_config "groups=<G>;eps=<number>;weight=0|1;bias=0|1"
//   aten_group_norm_backward: (dy [N, C, *], x [N, C, *], mean [N, G], rstd [N, G],
//     weight [C]?) -> (dx [N, C, *], dweight [C], dbias [C]; both zero without the weight:
//     ATen's kernel makes them like the weight, and the lowering takes this call without one
//     only where no parameter gradient is asked for); backend_config "groups=<G>;weight=0|1"
//
// Every type float32, C a multiple of G. The torch layer installs ATen's kernels
// (runtime/aten_group_norm.h); without them (the C++ tests, `vtrn hlo --run`) the executor
// computes the same formulas with sums in float64. The compiler prices a call as Vector-engine
// work over x.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

inline constexpr std::string_view kAtenGroupNormTarget = "vtrn.aten_group_norm";
inline constexpr std::string_view kAtenGroupNormBackwardTarget = "vtrn.aten_group_norm_backward";

struct AtenGroupNormConfig {
  std::int64_t groups = 1;
  double eps = 1e-5;  ///< the forward's only
  bool weight = false;
  bool bias = false;  ///< the forward's only
};

/// The forward's (|backward| false) or the backward's backend_config.
std::string aten_group_norm_config(const AtenGroupNormConfig& config, bool backward);
/// nullopt when |text| is not one aten_group_norm_config(_, backward) writes.
std::optional<AtenGroupNormConfig> parse_aten_group_norm_config(std::string_view text,
                                                                bool backward);

struct AtenGroupNormShape {
  AtenGroupNormConfig config;
  bool backward = false;
  std::int64_t batch = 0, channels = 0, per_channel = 0;  ///< N, C and the product of *
};
/// Whether |op| calls either kernel.
bool is_aten_group_norm(const hlo::Op& op);
/// The call's config and shape; throws hlo::Error naming what is wrong when its backend_config,
/// operands or results do not fit the forms above.
AtenGroupNormShape aten_group_norm_shape(const hlo::Block& b, const hlo::Op& op);

}  // namespace vtrn::compiler
