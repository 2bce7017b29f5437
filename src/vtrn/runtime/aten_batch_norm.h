// The executor's `custom_call @vtrn.aten_batch_norm` and `@vtrn.aten_batch_norm_backward`
// (compiler/aten_batch_norm.h): with the functions the torch layer installs (ATen's own CPU
// kernels, at the thread count torch.set_num_threads gave), the CPU's bits; without them (the
// C++ tests, `vtrn hlo --run`) the formulas with float64 sums, which agree within rounding.
#pragma once

#include <cstdint>
#include <vector>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::aten_batch_norm {

/// One forward over x of |dims| [N, C, *], row-major float32; the vectors [C], null where absent.
struct Call {
  std::vector<std::int64_t> dims;
  const float *x = nullptr, *weight = nullptr, *bias = nullptr;
  /// The running statistics (both or neither), which training updates in place.
  float *running_mean = nullptr, *running_var = nullptr;
  bool training = true;
  double momentum = 0.1, eps = 1e-5;
  int threads = 1;  ///< the thread budget ATen's kernel splits the channels over
  float *y = nullptr, *mean = nullptr, *invstd = nullptr;
};

/// One backward: a and b are the saved mean and invstd in training, the running mean and
/// variance in evaluation.
struct BackwardCall {
  std::vector<std::int64_t> dims;
  const float *dy = nullptr, *x = nullptr, *weight = nullptr, *a = nullptr, *b = nullptr;
  bool training = true;
  double eps = 1e-5;
  int threads = 1;
  float *dx = nullptr, *dweight = nullptr, *dbias = nullptr;
};

using Kernel = void (*)(const Call& call);
using BackwardKernel = void (*)(const BackwardCall& call);

/// Installs the pair (nullptr uninstalls). Safe against concurrent calls.
void install(Kernel kernel, BackwardKernel backward);
Kernel installed();
BackwardKernel installed_backward();

/// The fallbacks, per channel with float64 sums over its n = N * prod(*) elements. Training:
/// mean = sum(x) / n, var = sum((x - mean)^2) / n, invstd = 1 / sqrt(var + eps), the running
/// mean and variance moved by momentum towards mean and var * n / (n - 1); evaluation: mean and
/// invstd from the running ones. y = (x - mean) * invstd * weight + bias. Backward, with
/// xhat = (x - mean) * invstd: dweight = sum(dy * xhat), dbias = sum(dy), and
/// dx = (dy - sum(dy) / n - xhat * dweight / n) * invstd * weight in training,
/// dy * invstd * weight in evaluation.
void formula(const Call& call);
void backward_formula(const BackwardCall& call);

/// The custom calls' kernels.
void call(const CustomCallArgs& args);
void backward_call(const CustomCallArgs& args);

}  // namespace vtrn::runtime::aten_batch_norm
