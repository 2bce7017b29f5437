// The executor's `custom_call @vtrn.aten_group_norm` and `_backward`
// (compiler/aten_group_norm.h): with the functions the torch layer installs (ATen's own CPU
// kernels, at the thread count torch.set_num_threads gave), the CPU's bits; without them (the
// C++ tests, `vtrn hlo --run`) the formulas with float64 sums, which agree within rounding.
#pragma once

#include <cstdint>
#include <vector>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::aten_group_norm {

/// One forward over x of |dims| [N, C, *], row-major float32; weight and bias [C] or null.
struct Call {
  std::vector<std::int64_t> dims;
  std::int64_t groups = 1;
  double eps = 1e-5;
  const float *x = nullptr, *weight = nullptr, *bias = nullptr;
  int threads = 1;
  float *y = nullptr, *mean = nullptr, *rstd = nullptr;  ///< mean and rstd [N, G]
};

struct BackwardCall {
  std::vector<std::int64_t> dims;
  std::int64_t groups = 1;
  const float *dy = nullptr, *x = nullptr, *mean = nullptr, *rstd = nullptr, *weight = nullptr;
  int threads = 1;
  float *dx = nullptr, *dweight = nullptr, *dbias = nullptr;
};

using Kernel = void (*)(const Call& call);
using BackwardKernel = void (*)(const BackwardCall& call);

/// Installs the pair (nullptr uninstalls). Safe against concurrent calls.
void install(Kernel kernel, BackwardKernel backward);
Kernel installed();
BackwardKernel installed_backward();

/// The fallbacks, per (sample, group) of m = C / G * prod(*) elements with float64 sums:
/// mean, rstd = 1 / sqrt(population variance + eps), y = (x - mean) * rstd * weight + bias.
/// Backward, with g = dy * weight and xhat = (x - mean) * rstd per element:
/// dx = rstd * (g - sum(g) / m - xhat * sum(g * xhat) / m), dweight = sum over N and * of
/// dy * xhat, dbias = sum of dy (both zero without a weight).
void formula(const Call& call);
void backward_formula(const BackwardCall& call);

/// The custom calls' kernels.
void call(const CustomCallArgs& args);
void backward_call(const CustomCallArgs& args);

}  // namespace vtrn::runtime::aten_group_norm
