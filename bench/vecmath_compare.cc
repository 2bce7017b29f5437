// The candidate math libraries for the executor's elementwise loops, side by side:
// glibc's scalar libm (what the loops called before), SLEEF's vector functions (the ones ATen's
// Vectorized<float> calls) and Google Highway's contrib math. bench_vecmath.py compiles this file
// for the machine it runs on (-march=native: this is a measurement, never a shipped build) and
// calls it through ctypes, so all three run in one process on the same inputs.
//
//   impl: 0 libm, 1 SLEEF, 2 Highway (when built with VTRN_BENCH_HWY)
//   op:   0 exp, 1 log, 2 tanh, 3 erf, 4 sigmoid, 5 gelu (the exact, erf-based one)
#include <immintrin.h>
#include <sleef.h>

#include <chrono>
#include <cmath>
#include <cstdint>

#ifdef VTRN_BENCH_HWY
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>
namespace hn = hwy::HWY_NAMESPACE;
#endif

namespace {

constexpr float kSqrt1_2 = 0.70710678118654752440f;

void run_libm(int op, const float* x, float* y, std::int64_t n) {
  switch (op) {
    case 0:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
      return;
    case 1:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
      return;
    case 2:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      return;
    case 3:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
      return;
    case 4:
      for (std::int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
      return;
    default:
      for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * 0.5f * (1.0f + std::erf(x[i] * kSqrt1_2));
      return;
  }
}

// SLEEF's widest variants this machine has: 16 lanes with AVX-512, else 8 (AVX2).
#ifdef __AVX512F__
using VF = __m512;
constexpr int kLanes = 16;
inline VF vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, VF v) { _mm512_storeu_ps(p, v); }
inline VF vset(float f) { return _mm512_set1_ps(f); }
inline VF vadd(VF a, VF b) { return _mm512_add_ps(a, b); }
inline VF vsub(VF a, VF b) { return _mm512_sub_ps(a, b); }
inline VF vmul(VF a, VF b) { return _mm512_mul_ps(a, b); }
inline VF vdiv(VF a, VF b) { return _mm512_div_ps(a, b); }
#define VM_SLEEF(fn, u) Sleef_##fn##f16_##u
#else
using VF = __m256;
constexpr int kLanes = 8;
inline VF vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, VF v) { _mm256_storeu_ps(p, v); }
inline VF vset(float f) { return _mm256_set1_ps(f); }
inline VF vadd(VF a, VF b) { return _mm256_add_ps(a, b); }
inline VF vsub(VF a, VF b) { return _mm256_sub_ps(a, b); }
inline VF vmul(VF a, VF b) { return _mm256_mul_ps(a, b); }
inline VF vdiv(VF a, VF b) { return _mm256_div_ps(a, b); }
#define VM_SLEEF(fn, u) Sleef_##fn##f8_##u
#endif

// n is a multiple of 16 here (bench_vecmath.py sees to it).
void run_sleef(int op, const float* x, float* y, std::int64_t n) {
  const VF one = vset(1.0f), half = vset(0.5f), zero = vset(0.0f), r2 = vset(kSqrt1_2);
  for (std::int64_t i = 0; i < n; i += kLanes) {
    const VF v = vload(x + i);
    VF r;
    switch (op) {
      case 0:
        r = VM_SLEEF(exp, u10)(v);
        break;
      case 1:
        r = VM_SLEEF(log, u10)(v);
        break;
      case 2:
        r = VM_SLEEF(tanh, u10)(v);
        break;
      case 3:
        r = VM_SLEEF(erf, u10)(v);
        break;
      case 4:
        r = vdiv(one, vadd(one, VM_SLEEF(exp, u10)(vsub(zero, v))));
        break;
      default:
        r = vmul(vmul(v, half), vadd(one, VM_SLEEF(erf, u10)(vmul(v, r2))));
        break;
    }
    vstore(y + i, r);
  }
}

#ifdef VTRN_BENCH_HWY
// Returns false for the ops Highway's contrib math lacks (erf, hence the exact GELU).
bool run_hwy(int op, const float* x, float* y, std::int64_t n) {
  if (op == 3 || op == 5) return false;
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto one = hn::Set(d, 1.0f);
  for (std::int64_t i = 0; i < n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    switch (op) {
      case 0:
        hn::StoreU(hn::Exp(d, v), d, y + i);
        break;
      case 1:
        hn::StoreU(hn::Log(d, v), d, y + i);
        break;
      case 2:
        hn::StoreU(hn::Tanh(d, v), d, y + i);
        break;
      default:
        hn::StoreU(hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(v)))), d, y + i);
        break;
    }
  }
  return true;
}
#endif

}  // namespace

extern "C" {

// Highway's compiled target ("AVX3", "AVX2"), or nullptr without Highway.
const char* vm_hwy_target() {
#ifdef VTRN_BENCH_HWY
  return hwy::TargetName(HWY_STATIC_TARGET);
#else
  return nullptr;
#endif
}

// Computes op over x[0, n) into y; returns 0 when impl does not provide op.
int vm_run(int impl, int op, const float* x, float* y, std::int64_t n) {
  if (impl == 0) {
    run_libm(op, x, y, n);
    return 1;
  }
  if (impl == 1) {
    run_sleef(op, x, y, n);
    return 1;
  }
#ifdef VTRN_BENCH_HWY
  return run_hwy(op, x, y, n) ? 1 : 0;
#else
  return 0;
#endif
}

// The best of |reps| timed runs, in nanoseconds per element; -1 when impl lacks op.
double vm_time(int impl, int op, const float* x, float* y, std::int64_t n, int reps) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!vm_run(impl, op, x, y, n)) return -1;
    const std::chrono::duration<double, std::nano> dt = std::chrono::steady_clock::now() - t0;
    best = dt.count() < best ? dt.count() : best;
  }
  return best / static_cast<double>(n);
}
}
