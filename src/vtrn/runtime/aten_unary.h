// The float32 functions ATen's own unary kernels call for exp, log, sqrt, sin, cos and tanh on
// x86: MKL's VML in high-accuracy mode, linked into libtorch_cpu. They agree with SLEEF (what
// ATen's vectorized kernels call inside other ops, vecmath.h) only within an ULP, and VML's
// sqrt is not correctly rounded, so torch.exp(x) on the CPU is not the exp inside
// torch.sigmoid(x). An op lowered with `vtrn.math = "vml"` (hlo::Op::vml) is computed with the
// function installed here, which gives torch's CPU result bit for bit. The runtime has no
// such library of its own: the torch layer installs libtorch's, when the process has it.
// Without one installed, those ops compute as the unmarked ones do.
#pragma once

#include <cstdint>

namespace vtrn::runtime::aten_unary {

enum class Fn : int { kExp, kLog, kSqrt, kSin, kCos, kTanh };
inline constexpr int kFnCount = 6;

/// y[i] = f(x[i]) for i in [0, n), n <= 2^30 (callers split longer arrays).
using Impl = void (*)(std::int64_t n, const float* x, float* y);

/// Installs |impl| for |f| (nullptr uninstalls it). Safe against concurrent apply calls.
void install(Fn f, Impl impl);
/// Whether a function is installed for |f|.
bool installed(Fn f);
/// y[i] = f(x[i]) for i in [0, n) with the installed function; false (and y untouched) when
/// none is installed. x and y may be the same array.
bool apply(Fn f, const float* x, float* y, std::int64_t n);

}  // namespace vtrn::runtime::aten_unary
