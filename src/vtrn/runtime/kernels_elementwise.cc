// The loops a fused kernel runs over one chunk of values (see kernels_elementwise.h), each
// cloned per instruction set (isa_clones.h).
#include "vtrn/runtime/kernels_elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "vtrn/runtime/aten_sum.h"
#include "vtrn/runtime/executor.h"
#include "vtrn/runtime/isa_clones.h"
#include "vtrn/runtime/vecmath.h"

namespace vtrn::runtime::kernels::elementwise {

using hlo::DType;
using hlo::OpKind;
Cls cls_of(DType d) {
  if (d == DType::kF64) return Cls::kF64;
  if (d == DType::kF32 || d == DType::kBF16 || d == DType::kF16) return Cls::kF32;
  if (hlo::is_complex(d))
    throw ExecError("complex64 elementwise arithmetic is not supported by the vtrn executor");
  return Cls::kI64;
}

namespace {

std::int64_t wrap_int(DType d, std::int64_t v) {
  switch (d) {
    case DType::kPred:
      return v != 0;
    case DType::kI8:
      return static_cast<std::int8_t>(v);
    case DType::kI16:
      return static_cast<std::int16_t>(v);
    case DType::kI32:
      return static_cast<std::int32_t>(v);
    case DType::kU8:
      return static_cast<std::uint8_t>(v);
    case DType::kU16:
      return static_cast<std::uint16_t>(v);
    case DType::kU32:
      return static_cast<std::uint32_t>(v);
    default:
      return v;
  }
}

}  // namespace

VTRN_CLONES
void round_f32(DType d, float* x, std::int64_t n) {
  if (d == DType::kBF16)
    for (std::int64_t i = 0; i < n; ++i) x[i] = hlo::bf16_to_f32(hlo::f32_to_bf16(x[i]));
  else if (d == DType::kF16)
    for (std::int64_t i = 0; i < n; ++i) x[i] = hlo::f16_to_f32(hlo::f32_to_f16(x[i]));
}

void wrap_i64(DType d, std::int64_t* x, std::int64_t n) {
  if (d == DType::kI64 || d == DType::kU64) return;
  for (std::int64_t i = 0; i < n; ++i) x[i] = wrap_int(d, x[i]);
}

// Contiguous load of n elements starting at element |start|.
VTRN_CLONES
void load_contiguous(DType d, const std::uint8_t* p, std::int64_t start, std::int64_t n,
                     void* dst) {
  switch (d) {
    case DType::kF32:
      std::memcpy(dst, p + 4 * start, static_cast<std::size_t>(4 * n));
      return;
    case DType::kF64:
      std::memcpy(dst, p + 8 * start, static_cast<std::size_t>(8 * n));
      return;
    case DType::kI64:
    case DType::kU64:
      std::memcpy(dst, p + 8 * start, static_cast<std::size_t>(8 * n));
      return;
    case DType::kBF16: {
      const auto* s = reinterpret_cast<const std::uint16_t*>(p) + start;
      auto* o = static_cast<std::uint32_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<std::uint32_t>(s[i]) << 16;
      return;
    }
    case DType::kF16: {
      auto* o = static_cast<float*>(dst);
      for (std::int64_t i = 0; i < n; ++i) o[i] = load_elem<float>(d, p, start + i);
      return;
    }
    default: {
      auto* o = static_cast<std::int64_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) o[i] = load_elem<std::int64_t>(d, p, start + i);
      return;
    }
  }
}

VTRN_CLONES
void store_contiguous(DType d, const void* src, std::int64_t n, std::uint8_t* p,
                      std::int64_t start) {
  switch (d) {
    case DType::kF32:
      std::memcpy(p + 4 * start, src, static_cast<std::size_t>(4 * n));
      return;
    case DType::kF64:
    case DType::kI64:
    case DType::kU64:
      std::memcpy(p + 8 * start, src, static_cast<std::size_t>(8 * n));
      return;
    case DType::kBF16: {
      const auto* s = static_cast<const float*>(src);
      auto* o = reinterpret_cast<std::uint16_t*>(p) + start;
      for (std::int64_t i = 0; i < n; ++i) o[i] = hlo::f32_to_bf16(s[i]);
      return;
    }
    case DType::kF16: {
      const auto* s = static_cast<const float*>(src);
      auto* o = reinterpret_cast<std::uint16_t*>(p) + start;
      for (std::int64_t i = 0; i < n; ++i) o[i] = hlo::f32_to_f16(s[i]);
      return;
    }
    default: {
      const auto* s = static_cast<const std::int64_t*>(src);
      const int es = hlo::dtype_size(d);
      for (std::int64_t i = 0; i < n; ++i)
        std::memcpy(p + (start + i) * es, &s[i], static_cast<std::size_t>(es));
      return;
    }
  }
}

namespace {

// ATen's cpu_kernel_vec kernels (sigmoid, silu, pow, the tanh GELU) run whole steps of two
// vectors through SLEEF and the rest of a thread's range through the scalar function, glibc's
// libm. Those kernels are registered for AVX-512 too: a step is 2 x 16 floats where torch's CPU
// capability is AVX512, 2 x 8 elsewhere (aten_sum::vector_lanes(), which the torch layer sets).
// The executor's chunks are whole steps but for a range's last (FusedProgram::run runs ATen's
// thread ranges), so taking libm for the last len % step elements of a chunk makes the same
// split. exp takes it too: ATen's float32 exp is MKL's, which libm matches more often than SLEEF
// does; its reduced types agree either way.
std::int64_t vector_part(std::int64_t n) {
  const std::int64_t step = 2 * aten_sum::vector_lanes();
  return n - n % step;
}

}  // namespace

void logistic_float(bool silu, const float* a, float* o, std::int64_t n, bool sleef_everywhere) {
  const std::int64_t v = sleef_everywhere ? n : vector_part(n);
  vecmath::apply(silu ? vecmath::Fn::kSilu : vecmath::Fn::kSigmoid, a, o, v);
  for (std::int64_t i = v; i < n; ++i) o[i] = (silu ? a[i] : 1.0f) / (1.0f + std::exp(-a[i]));
}

void silu_backward_float(const float* g, const float* x, float* o, std::int64_t n,
                         bool sleef_everywhere) {
  const std::int64_t v = sleef_everywhere ? n : vector_part(n);
  vecmath::apply2(vecmath::Fn2::kSiluBackward, g, x, o, v);
  for (std::int64_t i = v; i < n; ++i) {
    const float s = 1.0f / (1.0f + std::exp(-x[i]));
    o[i] = (g[i] * s) * std::fma(x[i], 1.0f - s, 1.0f);
  }
}

namespace {

// The transcendental ops on float32 (every float32, bfloat16 and float16 value) take SLEEF's
// vector functions, as ATen's CPU kernels do (vecmath.h); float64 keeps libm.
bool unary_vecmath(OpKind k, const float* a, float* o, std::int64_t n) {
  using vecmath::Fn;
  switch (k) {
    case OpKind::kExp: {
      const std::int64_t v = vector_part(n);
      vecmath::apply(Fn::kExp, a, o, v);
      for (std::int64_t i = v; i < n; ++i) o[i] = std::exp(a[i]);
      return true;
    }
    case OpKind::kExpm1:
      vecmath::apply(Fn::kExpm1, a, o, n);
      return true;
    case OpKind::kLog:
      vecmath::apply(Fn::kLog, a, o, n);
      return true;
    case OpKind::kLog1p:
      vecmath::apply(Fn::kLog1p, a, o, n);
      return true;
    case OpKind::kTanh:
      vecmath::apply(Fn::kTanh, a, o, n);
      return true;
    case OpKind::kSine:
      vecmath::apply(Fn::kSin, a, o, n);
      return true;
    case OpKind::kCosine:
      vecmath::apply(Fn::kCos, a, o, n);
      return true;
    case OpKind::kLogistic:  // 1 / (1 + exp(-x)), as ATen's sigmoid
      logistic_float(false, a, o, n, false);
      return true;
    default:
      return false;
  }
}

}  // namespace

template <typename T>
VTRN_CLONES void unary_float(OpKind k, const T* __restrict a, T* __restrict o, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>)
    if (unary_vecmath(k, a, o, n)) return;
  switch (k) {
    case OpKind::kAbs:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::fabs(a[i]);
      return;
    case OpKind::kCeil:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::ceil(a[i]);
      return;
    case OpKind::kFloor:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::floor(a[i]);
      return;
    case OpKind::kCosine:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::cos(a[i]);
      return;
    case OpKind::kSine:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::sin(a[i]);
      return;
    case OpKind::kExp:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::exp(a[i]);
      return;
    case OpKind::kExpm1:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::expm1(a[i]);
      return;
    case OpKind::kLog:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::log(a[i]);
      return;
    case OpKind::kLog1p:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::log1p(a[i]);
      return;
    case OpKind::kLogistic:
      for (std::int64_t i = 0; i < n; ++i) o[i] = T(1) / (T(1) + std::exp(-a[i]));
      return;
    case OpKind::kNegate:
      for (std::int64_t i = 0; i < n; ++i) o[i] = -a[i];
      return;
    case OpKind::kRoundEven:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::nearbyint(a[i]);
      return;
    case OpKind::kRsqrt:
      for (std::int64_t i = 0; i < n; ++i) o[i] = T(1) / std::sqrt(a[i]);
      return;
    case OpKind::kSign:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] > 0 ? T(1) : a[i] < 0 ? T(-1) : a[i];
      return;
    case OpKind::kSqrt:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::sqrt(a[i]);
      return;
    case OpKind::kTanh:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::tanh(a[i]);
      return;
    default:
      throw ExecError("stablehlo." + std::string(hlo::op_name(k)) +
                      " is not supported for floating-point operands");
  }
}

template <typename T>
VTRN_CLONES void binary_float(OpKind k, const T* __restrict a, const T* __restrict b,
                              T* __restrict o, std::int64_t n) {
  switch (k) {
    case OpKind::kAdd:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
      return;
    case OpKind::kSubtract:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] - b[i];
      return;
    case OpKind::kMultiply:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] * b[i];
      return;
    case OpKind::kDivide:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] / b[i];
      return;
    case OpKind::kMaximum:
      for (std::int64_t i = 0; i < n; ++i) o[i] = fmax_nan(a[i], b[i]);
      return;
    case OpKind::kMinimum:
      for (std::int64_t i = 0; i < n; ++i) o[i] = fmin_nan(a[i], b[i]);
      return;
    case OpKind::kPower:
      if constexpr (std::is_same_v<T, float>) {  // SLEEF's, then libm's, as ATen's pow
        const std::int64_t v = vector_part(n);
        vecmath::pow(a, b, o, v);
        for (std::int64_t i = v; i < n; ++i) o[i] = std::pow(a[i], b[i]);
      } else {
        for (std::int64_t i = 0; i < n; ++i) o[i] = std::pow(a[i], b[i]);
      }
      return;
    case OpKind::kRemainder:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::fmod(a[i], b[i]);
      return;
    case OpKind::kAtan2:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::atan2(a[i], b[i]);
      return;
    default:
      throw ExecError("stablehlo." + std::string(hlo::op_name(k)) +
                      " is not supported for floating-point operands");
  }
}

bool has_binary_scalar_float(OpKind k) {
  switch (k) {
    case OpKind::kAdd:
    case OpKind::kSubtract:
    case OpKind::kMultiply:
    case OpKind::kDivide:
    case OpKind::kMaximum:
    case OpKind::kMinimum:
      return true;
    default:
      return false;
  }
}

// Each op keeps its operands in binary_float's order, so a NaN's payload is the same too.
#define VTRN_ROWS_LOOP(expr_left, expr_right)                               \
  for (std::int64_t i0 = 0, r = 0, pos = first_pos; i0 < n; ++r, pos = 0) { \
    const std::int64_t m = std::min(row_len - pos, n - i0);                 \
    const T s = rows[r * row_stride];                                       \
    const T* __restrict x = a + i0;                                         \
    T* __restrict y = o + i0;                                               \
    if (s_left)                                                             \
      for (std::int64_t i = 0; i < m; ++i) y[i] = (expr_left);              \
    else                                                                    \
      for (std::int64_t i = 0; i < m; ++i) y[i] = (expr_right);             \
    i0 += m;                                                                \
  }                                                                         \
  return;

template <typename T>
VTRN_CLONES void binary_rows_float(OpKind k, const T* __restrict a, const T* rows,
                                   std::int64_t row_stride, std::int64_t row_len,
                                   std::int64_t first_pos, bool s_left, T* __restrict o,
                                   std::int64_t n) {
  switch (k) {
    case OpKind::kAdd:
      VTRN_ROWS_LOOP(s + x[i], x[i] + s)
    case OpKind::kSubtract:
      VTRN_ROWS_LOOP(s - x[i], x[i] - s)
    case OpKind::kMultiply:
      VTRN_ROWS_LOOP(s * x[i], x[i] * s)
    case OpKind::kDivide:
      VTRN_ROWS_LOOP(s / x[i], x[i] / s)
    case OpKind::kMaximum:
      VTRN_ROWS_LOOP(fmax_nan(s, x[i]), fmax_nan(x[i], s))
    case OpKind::kMinimum:
      VTRN_ROWS_LOOP(fmin_nan(s, x[i]), fmin_nan(x[i], s))
    default:
      throw ExecError("stablehlo." + std::string(hlo::op_name(k)) + " has no scalar-operand loop");
  }
}

#undef VTRN_ROWS_LOOP

template <typename T>
void binary_scalar_float(OpKind k, const T* __restrict a, T s, bool s_left, T* __restrict o,
                         std::int64_t n) {
  binary_rows_float(k, a, &s, 0, n, 0, s_left, o, n);
}

template <typename T>
VTRN_CLONES void fma_rows(const T* __restrict a, const T* rows, std::int64_t row_stride,
                          std::int64_t row_len, std::int64_t first_pos, const T* __restrict c,
                          T* __restrict o, std::int64_t n) {
  for (std::int64_t i0 = 0, r = 0, pos = first_pos; i0 < n; ++r, pos = 0) {
    const std::int64_t m = std::min(row_len - pos, n - i0);
    const T s = rows[r * row_stride];
    const T* __restrict x = a + i0;
    const T* __restrict y = c + i0;
    T* __restrict z = o + i0;
    for (std::int64_t i = 0; i < m; ++i) z[i] = std::fma(x[i], s, y[i]);
    i0 += m;
  }
}

template void fma_rows<float>(const float*, const float*, std::int64_t, std::int64_t, std::int64_t,
                              const float*, float*, std::int64_t);
template void fma_rows<double>(const double*, const double*, std::int64_t, std::int64_t,
                               std::int64_t, const double*, double*, std::int64_t);
template void binary_scalar_float<float>(OpKind, const float*, float, bool, float*, std::int64_t);
template void binary_scalar_float<double>(OpKind, const double*, double, bool, double*,
                                          std::int64_t);
template void binary_rows_float<float>(OpKind, const float*, const float*, std::int64_t,
                                       std::int64_t, std::int64_t, bool, float*, std::int64_t);
template void binary_rows_float<double>(OpKind, const double*, const double*, std::int64_t,
                                        std::int64_t, std::int64_t, bool, double*, std::int64_t);

namespace {

std::int64_t int_pow(std::int64_t a, std::int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  std::uint64_t r = 1, base = static_cast<std::uint64_t>(a);
  while (b) {
    if (b & 1) r *= base;
    base *= base;
    b >>= 1;
  }
  return static_cast<std::int64_t>(r);
}

}  // namespace

void unary_int(OpKind k, DType d, const std::int64_t* a, std::int64_t* o, std::int64_t n) {
  switch (k) {
    case OpKind::kAbs:
      for (std::int64_t i = 0; i < n; ++i)
        o[i] = a[i] < 0 ? static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(a[i])) : a[i];
      return;
    case OpKind::kNegate:
      for (std::int64_t i = 0; i < n; ++i)
        o[i] = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(a[i]));
      return;
    case OpKind::kSign:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] > 0 ? 1 : a[i] < 0 ? -1 : 0;
      return;
    case OpKind::kNot:
      if (d == DType::kPred)
        for (std::int64_t i = 0; i < n; ++i) o[i] = !a[i];
      else
        for (std::int64_t i = 0; i < n; ++i) o[i] = ~a[i];
      return;
    default:
      throw ExecError("stablehlo." + std::string(hlo::op_name(k)) +
                      " is not supported for integer operands");
  }
}

void binary_int(OpKind k, DType d, const std::int64_t* __restrict a,
                const std::int64_t* __restrict b, std::int64_t* __restrict o, std::int64_t n) {
  using U = std::uint64_t;
  const bool uns = hlo::is_unsigned(d);
  switch (k) {
    case OpKind::kAdd:
      for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<std::int64_t>(U(a[i]) + U(b[i]));
      return;
    case OpKind::kSubtract:
      for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<std::int64_t>(U(a[i]) - U(b[i]));
      return;
    case OpKind::kMultiply:
      for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<std::int64_t>(U(a[i]) * U(b[i]));
      return;
    case OpKind::kAnd:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] & b[i];
      return;
    case OpKind::kOr:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] | b[i];
      return;
    case OpKind::kXor:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] ^ b[i];
      return;
    case OpKind::kMaximum:
      if (uns && d == DType::kU64)
        for (std::int64_t i = 0; i < n; ++i) o[i] = U(a[i]) > U(b[i]) ? a[i] : b[i];
      else
        for (std::int64_t i = 0; i < n; ++i) o[i] = std::max(a[i], b[i]);
      return;
    case OpKind::kMinimum:
      if (uns && d == DType::kU64)
        for (std::int64_t i = 0; i < n; ++i) o[i] = U(a[i]) < U(b[i]) ? a[i] : b[i];
      else
        for (std::int64_t i = 0; i < n; ++i) o[i] = std::min(a[i], b[i]);
      return;
    case OpKind::kDivide:
      // Division by zero gives all ones (-1); INT_MIN / -1 gives INT_MIN (XLA semantics).
      for (std::int64_t i = 0; i < n; ++i) {
        if (b[i] == 0)
          o[i] = -1;
        else if (uns && d == DType::kU64)
          o[i] = static_cast<std::int64_t>(U(a[i]) / U(b[i]));
        else if (b[i] == -1)
          o[i] = static_cast<std::int64_t>(0 - U(a[i]));
        else
          o[i] = a[i] / b[i];
      }
      return;
    case OpKind::kRemainder:
      for (std::int64_t i = 0; i < n; ++i) {
        if (b[i] == 0)
          o[i] = a[i];
        else if (uns && d == DType::kU64)
          o[i] = static_cast<std::int64_t>(U(a[i]) % U(b[i]));
        else if (b[i] == -1)
          o[i] = 0;
        else
          o[i] = a[i] % b[i];
      }
      return;
    case OpKind::kPower:
      for (std::int64_t i = 0; i < n; ++i) o[i] = int_pow(a[i], b[i]);
      return;
    default:
      throw ExecError("stablehlo." + std::string(hlo::op_name(k)) +
                      " is not supported for integer operands");
  }
}

template <typename T>
VTRN_CLONES void compare(hlo::Comparison c, const T* a, const T* b, std::int64_t* o,
                         std::int64_t n) {
  switch (c) {
    case hlo::Comparison::kEQ:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] == b[i];
      return;
    case hlo::Comparison::kNE:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] != b[i];
      return;
    case hlo::Comparison::kGE:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] >= b[i];
      return;
    case hlo::Comparison::kGT:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] > b[i];
      return;
    case hlo::Comparison::kLE:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] <= b[i];
      return;
    case hlo::Comparison::kLT:
      for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] < b[i];
      return;
  }
}

template <typename T>
VTRN_CLONES void select(const std::int64_t* p, const T* a, const T* b, T* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = p[i] ? a[i] : b[i];
}

template <typename T>
VTRN_CLONES void fill(T* o, T v, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = v;
}

template <typename T>
VTRN_CLONES void clamp(const T* lo, const T* x, const T* hi, T* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    T v = x[i] < lo[i] ? lo[i] : x[i];
    o[i] = v > hi[i] ? hi[i] : v;
  }
}

template <typename T>
VTRN_CLONES void fma(const T* a, const T* b, const T* c, T* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = std::fma(a[i], b[i], c[i]);
}

template <typename T>
VTRN_CLONES void fma_scalar(T s, const T* __restrict b, const T* __restrict c, T* __restrict o,
                            std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = std::fma(s, b[i], c[i]);
}

// (__restrict as the other loops: an in-place update's |o| is an operand at the same index,
// each element read before it is written.)
VTRN_CLONES void fma_scaled(float s, const float* __restrict a, const float* __restrict b,
                            const float* __restrict c, float* __restrict o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = std::fma(s * a[i], b[i], c[i]);
}

VTRN_CLONES void add_scaled_quotient(float s, const float* __restrict a, const float* __restrict b,
                                     const float* __restrict c, float* __restrict o,
                                     std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] + s * a[i] / b[i];
}

VTRN_CLONES void fma_difference(float s, const float* __restrict a, const float* __restrict b,
                                const float* __restrict c, float* __restrict o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = std::fma(s, a[i] - b[i], c[i]);
}

namespace {

// As PyTorch's CPU kernels convert (x86's truncating conversions): NaN and values outside the
// conversion's range give the "integer indefinite" value, the minimum. int64 converts
// directly and the narrower types through int32, then wrap: int16 of 70000.0 is 4464, int32
// of 3e9 is INT32_MIN, int64 of NaN is INT64_MIN. uint32 goes through int64, which is right
// within its range and for negative values (the CPU's own results beyond are inconsistent).
template <typename F>
std::int64_t float_to_int(F v, DType d) {
  if (d == DType::kPred) return v != 0;
  const double x = static_cast<double>(v);
  const auto to64 = [](double x) {
    return x >= -9223372036854775808.0 && x < 9223372036854775808.0
               ? static_cast<std::int64_t>(x)
               : std::numeric_limits<std::int64_t>::min();
  };
  switch (d) {
    case DType::kI64:
      return to64(x);
    case DType::kU64:  // through the unsigned conversion, which clamps
      if (!(x > 0)) return 0;
      return x >= 18446744073709551616.0 ? -1
                                         : static_cast<std::int64_t>(static_cast<std::uint64_t>(x));
    case DType::kU32:
      return wrap_int(d, to64(x));
    default:
      return wrap_int(d, x >= -2147483648.0 && x < 2147483648.0
                             ? static_cast<std::int64_t>(static_cast<std::int32_t>(x))
                             : std::numeric_limits<std::int32_t>::min());
  }
}

}  // namespace

VTRN_CLONES
void convert(DType from, DType to, const void* a, void* o, std::int64_t n) {
  const Cls cf = cls_of(from), ct = cls_of(to);
  if (cf == Cls::kF32 && ct == Cls::kF32) {
    std::memcpy(o, a, static_cast<std::size_t>(4 * n));
    round_f32(to, static_cast<float*>(o), n);
  } else if (cf == Cls::kF32 && ct == Cls::kF64) {
    for (std::int64_t i = 0; i < n; ++i)
      static_cast<double*>(o)[i] = static_cast<const float*>(a)[i];
  } else if (cf == Cls::kF64 && ct == Cls::kF32) {
    if (to == DType::kF32)
      for (std::int64_t i = 0; i < n; ++i)
        static_cast<float*>(o)[i] = static_cast<float>(static_cast<const double*>(a)[i]);
    else
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint8_t tmp[2];
        hlo::store_double(to, static_cast<const double*>(a)[i], tmp);
        static_cast<float*>(o)[i] = hlo::load_double(to, tmp);
      }
  } else if (cf == Cls::kF64 && ct == Cls::kF64) {
    std::memcpy(o, a, static_cast<std::size_t>(8 * n));
  } else if (cf == Cls::kI64 && ct == Cls::kF32) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t v = static_cast<const std::int64_t*>(a)[i];
      static_cast<float*>(o)[i] = from == DType::kU64
                                      ? static_cast<float>(static_cast<std::uint64_t>(v))
                                      : static_cast<float>(v);
    }
    round_f32(to, static_cast<float*>(o), n);
  } else if (cf == Cls::kI64 && ct == Cls::kF64) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t v = static_cast<const std::int64_t*>(a)[i];
      static_cast<double*>(o)[i] = from == DType::kU64
                                       ? static_cast<double>(static_cast<std::uint64_t>(v))
                                       : static_cast<double>(v);
    }
  } else if (cf == Cls::kF32 && ct == Cls::kI64) {
    for (std::int64_t i = 0; i < n; ++i)
      static_cast<std::int64_t*>(o)[i] = float_to_int(static_cast<const float*>(a)[i], to);
  } else if (cf == Cls::kF64 && ct == Cls::kI64) {
    for (std::int64_t i = 0; i < n; ++i)
      static_cast<std::int64_t*>(o)[i] = float_to_int(static_cast<const double*>(a)[i], to);
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      static_cast<std::int64_t*>(o)[i] = wrap_int(to, static_cast<const std::int64_t*>(a)[i]);
  }
}

template void unary_float<float>(OpKind, const float*, float*, std::int64_t);
template void unary_float<double>(OpKind, const double*, double*, std::int64_t);
template void binary_float<float>(OpKind, const float*, const float*, float*, std::int64_t);
template void binary_float<double>(OpKind, const double*, const double*, double*, std::int64_t);
template void compare<float>(hlo::Comparison, const float*, const float*, std::int64_t*,
                             std::int64_t);
template void compare<double>(hlo::Comparison, const double*, const double*, std::int64_t*,
                              std::int64_t);
template void compare<std::int64_t>(hlo::Comparison, const std::int64_t*, const std::int64_t*,
                                    std::int64_t*, std::int64_t);
template void compare<std::uint64_t>(hlo::Comparison, const std::uint64_t*, const std::uint64_t*,
                                     std::int64_t*, std::int64_t);
template void select<float>(const std::int64_t*, const float*, const float*, float*, std::int64_t);
template void select<double>(const std::int64_t*, const double*, const double*, double*,
                             std::int64_t);
template void select<std::int64_t>(const std::int64_t*, const std::int64_t*, const std::int64_t*,
                                   std::int64_t*, std::int64_t);
template void fill<float>(float*, float, std::int64_t);
template void fill<double>(double*, double, std::int64_t);
template void fill<std::int64_t>(std::int64_t*, std::int64_t, std::int64_t);
template void clamp<float>(const float*, const float*, const float*, float*, std::int64_t);
template void fma<float>(const float*, const float*, const float*, float*, std::int64_t);
template void fma_scalar<float>(float, const float*, const float*, float*, std::int64_t);
template void fma_scalar<double>(double, const double*, const double*, double*, std::int64_t);
template void fma<double>(const double*, const double*, const double*, double*, std::int64_t);
template void clamp<double>(const double*, const double*, const double*, double*, std::int64_t);
template void clamp<std::int64_t>(const std::int64_t*, const std::int64_t*, const std::int64_t*,
                                  std::int64_t*, std::int64_t);

}  // namespace vtrn::runtime::kernels::elementwise
