// The AVX2 path of vecmath.h: SLEEF's 8-lane avx2 functions (which use FMA). This file alone is
// compiled with -mavx2 -mfma, and it holds no inline code another file could share (no standard
// library), so no AVX2 instruction reaches a CPU that vecmath.cc did not find able to run it.
#include <immintrin.h>
#include <sleef.h>

#include "vtrn/runtime/vecmath.h"

namespace vtrn::runtime::vecmath::detail {

namespace {

__m256 call(int f, __m256 v) {
  switch (static_cast<Fn>(f)) {
    case Fn::kExp:
      return Sleef_expf8_u10avx2(v);
    case Fn::kExpm1:
      return Sleef_expm1f8_u10avx2(v);
    case Fn::kLog:
      return Sleef_logf8_u10avx2(v);
    case Fn::kLog1p:
      return Sleef_log1pf8_u10avx2(v);
    case Fn::kTanh:
      return Sleef_tanhf8_u10avx2(v);
    case Fn::kSin:
      return Sleef_sinf8_u35avx2(v);
    case Fn::kSigmoid:
    case Fn::kSilu: {
      const __m256 one = _mm256_set1_ps(1.0f);
      const __m256 e = Sleef_expf8_u10avx2(_mm256_xor_ps(v, _mm256_set1_ps(-0.0f)));
      return _mm256_div_ps(static_cast<Fn>(f) == Fn::kSilu ? v : one, _mm256_add_ps(one, e));
    }
    case Fn::kCos:
      break;
  }
  return Sleef_cosf8_u35avx2(v);
}

}  // namespace

void apply_avx2(int f, const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, call(f, _mm256_loadu_ps(x + i)));
  if (i < n) {  // the tail through the same function, its missing lanes zero
    alignas(32) float in[8] = {}, out[8];
    for (std::int64_t k = 0; k < n - i; ++k) in[k] = x[i + k];
    _mm256_store_ps(out, call(f, _mm256_load_ps(in)));
    for (std::int64_t k = 0; k < n - i; ++k) y[i + k] = out[k];
  }
}

namespace {

__m256 call2(int f, __m256 a, __m256 b) {
  if (static_cast<Fn2>(f) == Fn2::kPow) return Sleef_powf8_u10avx2(a, b);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 s = call(static_cast<int>(Fn::kSigmoid), b);
  return _mm256_mul_ps(_mm256_mul_ps(a, s), _mm256_fmadd_ps(b, _mm256_sub_ps(one, s), one));
}

}  // namespace

void apply2_avx2(int f, const float* a, const float* b, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, call2(f, _mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    alignas(32) float ina[8] = {}, inb[8] = {}, out[8];
    for (std::int64_t k = 0; k < n - i; ++k) {
      ina[k] = a[i + k];
      inb[k] = b[i + k];
    }
    _mm256_store_ps(out, call2(f, _mm256_load_ps(ina), _mm256_load_ps(inb)));
    for (std::int64_t k = 0; k < n - i; ++k) y[i + k] = out[k];
  }
}

}  // namespace vtrn::runtime::vecmath::detail
