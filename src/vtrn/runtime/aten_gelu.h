// The executor's `custom_call @vtrn.aten_gelu` and `@vtrn.aten_gelu_backward`, and their tanh
// approximations `@vtrn.aten_gelu_tanh` and `_backward` (compiler/aten_gelu.h): with the
// functions the torch layer installs (ATen's own CPU kernel), the CPU's bits; without them (the
// C++ tests, `vtrn hlo --run`) ATen's scalar formula with glibc's erff, expf and tanhf, which
// agrees within a few ULP.
#pragma once

#include <cstdint>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::aten_gelu {

/// torch's `approximate` argument.
enum class Approximation { kNone, kTanh };

/// y[i] = gelu(x[i]) for i in [0, n).
using Forward = void (*)(Approximation a, std::int64_t n, const float* x, float* y);
/// dx[i] = dy[i] * gelu'(x[i]) for i in [0, n).
using Backward = void (*)(Approximation a, std::int64_t n, const float* dy, const float* x,
                          float* dx);

/// Installs the pair (nullptr uninstalls). Safe against concurrent calls.
void install(Forward forward, Backward backward);
bool installed();

/// The fallback, in float32. kNone: x * 0.5 * (1 + erf(x * sqrt(1/2))) and
/// dy * (0.5 * (1 + erf(x * sqrt(1/2))) + x * (exp(-x^2 / 2) / sqrt(2 pi))). kTanh:
/// 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) (x + 0.044715 x^3), and
/// dy * (0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) sqrt(2 / pi) (1 + 3 * 0.044715 x^2)).
void scalar_forward(Approximation a, std::int64_t n, const float* x, float* y);
void scalar_backward(Approximation a, std::int64_t n, const float* dy, const float* x, float* dx);

/// The custom calls' kernels.
void forward_call(const CustomCallArgs& args);
void backward_call(const CustomCallArgs& args);
void tanh_forward_call(const CustomCallArgs& args);
void tanh_backward_call(const CustomCallArgs& args);

}  // namespace vtrn::runtime::aten_gelu
