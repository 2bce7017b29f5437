// The AVX-512 path of vecmath.h: SLEEF's 16-lane avx512f functions. This file alone is compiled
// with -mavx512f, and it holds no inline code another file could share (no standard library),
// so no AVX-512 instruction reaches a CPU that vecmath.cc did not find able to run it.
#include <immintrin.h>
#include <sleef.h>

#include "vtrn/runtime/vecmath.h"

namespace vtrn::runtime::vecmath::detail {

namespace {

__m512 call(int f, __m512 v) {
  switch (static_cast<Fn>(f)) {
    case Fn::kExp:
      return Sleef_expf16_u10avx512f(v);
    case Fn::kExpm1:
      return Sleef_expm1f16_u10avx512f(v);
    case Fn::kLog:
      return Sleef_logf16_u10avx512f(v);
    case Fn::kLog1p:
      return Sleef_log1pf16_u10avx512f(v);
    case Fn::kTanh:
      return Sleef_tanhf16_u10avx512f(v);
    case Fn::kSin:
      return Sleef_sinf16_u35avx512f(v);
    case Fn::kSigmoid:
    case Fn::kSilu: {
      const __m512 one = _mm512_set1_ps(1.0f);
      const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
      const __m512 e = Sleef_expf16_u10avx512f(
          _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sign)));
      return _mm512_div_ps(static_cast<Fn>(f) == Fn::kSilu ? v : one, _mm512_add_ps(one, e));
    }
    case Fn::kCos:
      break;
  }
  return Sleef_cosf16_u35avx512f(v);
}

}  // namespace

void apply_avx512(int f, const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, call(f, _mm512_loadu_ps(x + i)));
  if (i < n) {  // the tail through the same function, its missing lanes zero
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, call(f, _mm512_maskz_loadu_ps(m, x + i)));
  }
}

namespace {

__m512 call2(int f, __m512 a, __m512 b) {
  if (static_cast<Fn2>(f) == Fn2::kPow) return Sleef_powf16_u10avx512f(a, b);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 s = call(static_cast<int>(Fn::kSigmoid), b);
  return _mm512_mul_ps(_mm512_mul_ps(a, s), _mm512_fmadd_ps(b, _mm512_sub_ps(one, s), one));
}

}  // namespace

void apply2_avx512(int f, const float* a, const float* b, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, call2(f, _mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(
        y + i, m, call2(f, _mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

}  // namespace vtrn::runtime::vecmath::detail
