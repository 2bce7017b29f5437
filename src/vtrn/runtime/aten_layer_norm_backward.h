// The executor's `custom_call @vtrn.aten_layer_norm_backward`
// (compiler/aten_layer_norm_backward.h): with the function the torch layer installs (ATen's own
// CPU kernel, at the thread count torch.set_num_threads gave), the CPU's bits; without it (the
// C++ tests, `vtrn hlo --run`) the formula with float64 sums, which agrees within rounding.
#pragma once

#include <cstdint>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::aten_layer_norm_backward {

/// One backward: rows x n float32, row-major; gamma null where the forward had none. dgamma
/// is written only with gamma and dbeta only with |beta|.
struct Call {
  std::int64_t rows = 0, n = 0;
  const float *dy = nullptr, *x = nullptr, *mean = nullptr, *rstd = nullptr, *gamma = nullptr;
  bool beta = false;
  int threads = 1;  ///< the thread budget ATen's kernel splits the rows over
  float *dx = nullptr, *dgamma = nullptr, *dbeta = nullptr;
};

using Kernel = void (*)(const Call& call);

/// Installs |kernel| (nullptr uninstalls). Safe against concurrent calls.
void install(Kernel kernel);
Kernel installed();

/// The fallback: g = dy * gamma (dy without gamma), xhat = (x - mean) * rstd,
/// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, dgamma = sum over rows of
/// dy * xhat, dbeta = sum of dy; every sum in float64.
void formula(const Call& call);

/// The custom call's kernel.
void call(const CustomCallArgs& args);

}  // namespace vtrn::runtime::aten_layer_norm_backward
