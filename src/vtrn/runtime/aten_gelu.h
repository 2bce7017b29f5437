// The executor's `custom_call @vtrn.aten_gelu` and `@vtrn.aten_gelu_backward`
// (compiler/aten_gelu.h): with the functions the torch layer installs (ATen's own CPU kernel),
// the CPU's bits; without them (the C++ tests, `vtrn hlo --run`) ATen's scalar formula with
// glibc's erff and expf, which agrees within a few ULP.
#pragma once

#include <cstdint>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::aten_gelu {

/// y[i] = gelu(x[i]) for i in [0, n).
using Forward = void (*)(std::int64_t n, const float* x, float* y);
/// dx[i] = dy[i] * gelu'(x[i]) for i in [0, n).
using Backward = void (*)(std::int64_t n, const float* dy, const float* x, float* dx);

/// Installs the pair (nullptr uninstalls). Safe against concurrent calls.
void install(Forward forward, Backward backward);
bool installed();

/// The fallback: x * 0.5 * (1 + erf(x * sqrt(1/2))) and
/// dy * (0.5 * (1 + erf(x * sqrt(1/2))) + x * (exp(-x^2 / 2) / sqrt(2 pi))), in float32.
void scalar_forward(std::int64_t n, const float* x, float* y);
void scalar_backward(std::int64_t n, const float* dy, const float* x, float* dx);

/// The custom calls' kernels.
void forward_call(const CustomCallArgs& args);
void backward_call(const CustomCallArgs& args);

}  // namespace vtrn::runtime::aten_gelu
