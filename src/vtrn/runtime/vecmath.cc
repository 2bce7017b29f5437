// Chooses the vector math path by the CPU's features (see vecmath.h).
#include "vtrn/runtime/vecmath.h"

#include <cmath>

namespace vtrn::runtime::vecmath {

namespace {

Isa detect() {
  // libgcc's cpuid check also asks the OS (XGETBV) whether it saves the wider registers.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
  return Isa::kLibm;
}

void apply_libm(Fn f, const float* x, float* y, std::int64_t n) {
  switch (f) {
    case Fn::kExp:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
      return;
    case Fn::kExpm1:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::expm1(x[i]);
      return;
    case Fn::kLog:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
      return;
    case Fn::kLog1p:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::log1p(x[i]);
      return;
    case Fn::kTanh:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      return;
    case Fn::kSin:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::sin(x[i]);
      return;
    case Fn::kCos:
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::cos(x[i]);
      return;
    case Fn::kSigmoid:
      for (std::int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
      return;
    case Fn::kSilu:
      for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
      return;
  }
}

}  // namespace

Isa best_isa() {
  static const Isa isa = detect();
  return isa;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "avx512f";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kLibm:
      break;
  }
  return "libm";
}

bool apply_on(Isa isa, Fn f, const float* x, float* y, std::int64_t n) {
  if (static_cast<int>(isa) > static_cast<int>(best_isa())) return false;
  switch (isa) {
    case Isa::kAvx512:
      detail::apply_avx512(static_cast<int>(f), x, y, n);
      break;
    case Isa::kAvx2:
      detail::apply_avx2(static_cast<int>(f), x, y, n);
      break;
    case Isa::kLibm:
      apply_libm(f, x, y, n);
      break;
  }
  return true;
}

void apply(Fn f, const float* x, float* y, std::int64_t n) { apply_on(best_isa(), f, x, y, n); }

bool apply2_on(Isa isa, Fn2 f, const float* a, const float* b, float* y, std::int64_t n) {
  if (static_cast<int>(isa) > static_cast<int>(best_isa())) return false;
  switch (isa) {
    case Isa::kAvx512:
      detail::apply2_avx512(static_cast<int>(f), a, b, y, n);
      break;
    case Isa::kAvx2:
      detail::apply2_avx2(static_cast<int>(f), a, b, y, n);
      break;
    case Isa::kLibm:
      if (f == Fn2::kPow) {
        for (std::int64_t i = 0; i < n; ++i) y[i] = std::pow(a[i], b[i]);
      } else {
        for (std::int64_t i = 0; i < n; ++i) {
          const float s = 1.0f / (1.0f + std::exp(-b[i]));
          y[i] = (a[i] * s) * std::fma(b[i], 1.0f - s, 1.0f);
        }
      }
      break;
  }
  return true;
}

void apply2(Fn2 f, const float* a, const float* b, float* y, std::int64_t n) {
  apply2_on(best_isa(), f, a, b, y, n);
}

}  // namespace vtrn::runtime::vecmath
