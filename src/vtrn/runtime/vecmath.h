// Vectorized float32 transcendentals for the executor's elementwise loops, from SLEEF: the
// functions and accuracy variants ATen's Vectorized<float> calls (exp, expm1, log, log1p, tanh
// and pow within 1.0 ULP, sin and cos within 3.5 ULP). A bfloat16 or float16 op computes in
// float32 and rounds once, so it gives torch's CPU result bit for bit wherever ATen takes these
// functions (every reduced-precision op here, and float32 expm1, log1p, pow and sigmoid). ATen's
// own float32 exp, log and tanh kernels go through MKL instead, which agrees within 1 ULP; those
// ops compute with MKL's functions where the process has them (aten_unary.h).
//
// The code path is chosen once per process by the CPU's features (AVX-512F, else AVX2 with FMA,
// else glibc's scalar libm), never by the build machine's. A tail shorter than a vector runs
// through the same vector function, its missing lanes zero, as ATen's partial vectors do. The
// 1.0-ULP functions give each value the same result on either vector path and wherever a chunk
// ends; sin and cos reduce a whole vector's arguments the wide way when any lane is large, so
// their last bits can depend on the neighbours in a vector of 16 (ATen's grouping too, since
// the executor's chunks start at multiples of 16 elements) and differ slightly between the
// AVX2 and AVX-512 builds.
#pragma once

#include <cstdint>

namespace vtrn::runtime::vecmath {

/// kSigmoid is 1 / (1 + exp(-x)) and kSilu x / (1 + exp(-x)), each step rounded in turn with
/// exp at 1.0 ULP: ATen's vectorized sigmoid and silu, in one pass instead of four.
enum class Fn : int { kExp, kExpm1, kLog, kLog1p, kTanh, kSin, kCos, kSigmoid, kSilu };

enum class Isa : int { kLibm, kAvx2, kAvx512 };

/// The best path this CPU runs.
Isa best_isa();
/// "avx512f", "avx2" or "libm".
const char* isa_name(Isa isa);

/// y[i] = f(x[i]) for i in [0, n), on the best path. x and y may be the same array.
void apply(Fn f, const float* x, float* y, std::int64_t n);
/// The same on a given path, for tests and benchmarks; false when this CPU cannot run it.
bool apply_on(Isa isa, Fn f, const float* x, float* y, std::int64_t n);

/// Functions of two arguments: kPow is pow(a, b) (SLEEF's u10 powf); kSiluBackward is silu's
/// gradient for gradient a at input b as ATen's vectorized kernel computes it: s = 1 / (1 +
/// exp(-b)), then (a * s) * (b * (1 - s) + 1), the multiply-add rounded once.
enum class Fn2 : int { kPow, kSiluBackward };

/// y[i] = f(a[i], b[i]) for i in [0, n), on the best path; y may be a or b.
void apply2(Fn2 f, const float* a, const float* b, float* y, std::int64_t n);
bool apply2_on(Isa isa, Fn2 f, const float* a, const float* b, float* y, std::int64_t n);
inline void pow(const float* a, const float* b, float* y, std::int64_t n) {
  apply2(Fn2::kPow, a, b, y, n);
}
inline bool pow_on(Isa isa, const float* a, const float* b, float* y, std::int64_t n) {
  return apply2_on(isa, Fn2::kPow, a, b, y, n);
}

namespace detail {
// The per-ISA loops, each in a file compiled for its instruction set (vecmath_avx512.cc,
// vecmath_avx2.cc); called only once the CPU is known to have it. |f| is an Fn.
void apply_avx512(int f, const float* x, float* y, std::int64_t n);
void apply_avx2(int f, const float* x, float* y, std::int64_t n);
// |f| is an Fn2.
void apply2_avx512(int f, const float* a, const float* b, float* y, std::int64_t n);
void apply2_avx2(int f, const float* a, const float* b, float* y, std::int64_t n);
}  // namespace detail

}  // namespace vtrn::runtime::vecmath
