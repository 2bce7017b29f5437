// Internal to the executor: the loops a fused kernel runs over one chunk of values, one tight
// loop per op so the C++ compiler vectorizes it. A chunk holds float32 (float32, bfloat16 and
// float16 values), float64 or int64 (every integer and pred type) elements: the loop's class.
#pragma once

#include <cstdint>
#include <cstring>

#include "vtrn/hlo/ir.h"
#include "vtrn/runtime/executor_kernels.h"

namespace vtrn::runtime::kernels::elementwise {

using hlo::DType;
using hlo::OpKind;
using Cls = FusedProgram::Cls;

/// The class a value of dtype |d| is computed in. Throws ExecError for complex64.
Cls cls_of(DType d);

/// Rounds float32 results to |d| (bfloat16, float16; nearest even); a no-op for float32.
void round_f32(DType d, float* x, std::int64_t n);
/// Wraps int64 results to the integer type |d|.
void wrap_i64(DType d, std::int64_t* x, std::int64_t n);

// Reads element |i| of storage |dtype| into the chunk's class.
template <typename T>
T load_elem(DType d, const std::uint8_t* p, std::int64_t i);

template <>
inline float load_elem<float>(DType d, const std::uint8_t* p, std::int64_t i) {
  switch (d) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case DType::kBF16: {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return hlo::bf16_to_f32(h);
    }
    default: {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return hlo::f16_to_f32(h);
    }
  }
}
template <>
inline double load_elem<double>(DType, const std::uint8_t* p, std::int64_t i) {
  double f;
  std::memcpy(&f, p + 8 * i, 8);
  return f;
}
template <>
inline std::int64_t load_elem<std::int64_t>(DType d, const std::uint8_t* p, std::int64_t i) {
  switch (d) {
    case DType::kPred:
      return p[i] != 0;
    case DType::kI8:
      return static_cast<std::int8_t>(p[i]);
    case DType::kU8:
      return p[i];
    case DType::kI16: {
      std::int16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case DType::kU16: {
      std::uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case DType::kI32: {
      std::int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case DType::kU32: {
      std::uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    default: {
      std::int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
  }
}

template <typename T>
inline T fmax_nan(T a, T b) {
  return (a > b || a != a) ? a : b;
}
template <typename T>
inline T fmin_nan(T a, T b) {
  return (a < b || a != a) ? a : b;
}

/// |n| elements of storage |d| from element |start| of |p| into a chunk of the class of |d|.
void load_contiguous(DType d, const std::uint8_t* p, std::int64_t start, std::int64_t n, void* dst);
/// The inverse of load_contiguous: rounds or wraps to |d|.
void store_contiguous(DType d, const void* src, std::int64_t n, std::uint8_t* p,
                      std::int64_t start);

/// The ops below throw ExecError for an op kind they do not implement. T is float or double.
template <typename T>
void unary_float(OpKind k, const T* __restrict a, T* __restrict o, std::int64_t n);
template <typename T>
void binary_float(OpKind k, const T* __restrict a, const T* __restrict b, T* __restrict o,
                  std::int64_t n);
/// ATen's vectorized sigmoid, 1 / (1 + exp(-x)), or with |silu| its silu, x / (1 + exp(-x)), in
/// one pass: each step rounded in turn, exp SLEEF's on ATen's whole vector steps (the chunk's
/// length but for len % step) and libm's on the rest, or SLEEF's on every element when
/// |sleef_everywhere| (Op::sleef). The same bits as negate, exponential, add 1 and divide run one
/// by one over the chunk. |a| and |o| may be the same.
void logistic_float(bool silu, const float* a, float* o, std::int64_t n, bool sleef_everywhere);
/// silu's gradient for gradient |g| at input |x| as ATen's vectorized kernel computes it: the
/// sigmoid s of logistic_float, then (g * s) * fma(x, 1 - s, 1), in one pass.
void silu_backward_float(const float* g, const float* x, float* o, std::int64_t n,
                         bool sleef_everywhere);
/// Whether binary_scalar_float takes |k|.
bool has_binary_scalar_float(OpKind k);
/// binary_float with one operand the same value |s| at every element: the left one when
/// |s_left|, else the right one. The same bits as binary_float given a chunk filled with |s|,
/// without the chunk: a fused loop's scalar operands (an optimizer's learning rate and betas,
/// add's alpha) then cost no fill and no load per element.
template <typename T>
void binary_scalar_float(OpKind k, const T* __restrict a, T s, bool s_left, T* __restrict o,
                         std::int64_t n);
/// binary_scalar_float with one scalar per row of |row_len| elements: element i of the |n| is
/// at position first_pos + i of the rows, and row r's scalar is rows[r * row_stride] (a
/// per-row value broadcast along the row: a softmax's max and sum, a norm's scale).
template <typename T>
void binary_rows_float(OpKind k, const T* __restrict a, const T* rows, std::int64_t row_stride,
                       std::int64_t row_len, std::int64_t first_pos, bool s_left, T* __restrict o,
                       std::int64_t n);
/// o = fma(a, s, c) elementwise with one multiplicand per row, as binary_rows_float reads it:
/// the same bits as fma given a chunk filled with the rows' values.
template <typename T>
void fma_rows(const T* __restrict a, const T* rows, std::int64_t row_stride, std::int64_t row_len,
              std::int64_t first_pos, const T* __restrict c, T* __restrict o, std::int64_t n);
/// Integer ops in int64 with the semantics of |d| (unsigned division, pred `not`, ...).
void unary_int(OpKind k, DType d, const std::int64_t* a, std::int64_t* o, std::int64_t n);
void binary_int(OpKind k, DType d, const std::int64_t* __restrict a,
                const std::int64_t* __restrict b, std::int64_t* __restrict o, std::int64_t n);
/// T is float, double, int64 or uint64; the result is a pred chunk (int64 0/1).
template <typename T>
void compare(hlo::Comparison c, const T* a, const T* b, std::int64_t* o, std::int64_t n);
template <typename T>
void select(const std::int64_t* p, const T* a, const T* b, T* o, std::int64_t n);
template <typename T>
void clamp(const T* lo, const T* x, const T* hi, T* o, std::int64_t n);
/// o = a * b + c rounded once (std::fma), for T float or double.
template <typename T>
void fma(const T* a, const T* b, const T* c, T* o, std::int64_t n);
/// fma with a multiplicand the same value |s| at every element (either one: the product is
/// exact, so fma(s, b, c) and fma(b, s, c) are the same bits).
template <typename T>
void fma_scalar(T s, const T* __restrict b, const T* __restrict c, T* __restrict o, std::int64_t n);
/// The optimizers' folded updates (FusedProgram::Instr::Update), each operation rounded on its
/// own as the instructions they replace: o = fma(s * a, b, c) (addcmul), o = c + s * a / b
/// (addcdiv), o = fma(s, a - b, c) (lerp). |o| may be one of the operands (an in-place update).
void fma_scaled(float s, const float* __restrict a, const float* __restrict b,
                const float* __restrict c, float* __restrict o, std::int64_t n);
void add_scaled_quotient(float s, const float* __restrict a, const float* __restrict b,
                         const float* __restrict c, float* __restrict o, std::int64_t n);
void fma_difference(float s, const float* __restrict a, const float* __restrict b,
                    const float* __restrict c, float* __restrict o, std::int64_t n);
/// o[0, n) = v, in the widest vectors the CPU has: a scalar operand's slot is filled per loop.
/// T is float, double or int64.
template <typename T>
void fill(T* o, T v, std::int64_t n);
/// Converts a chunk of dtype |from| to dtype |to|. Float to int converts as PyTorch's CPU does
/// (NaN and out-of-range values give the integer minimum; narrow types wrap from int32).
void convert(DType from, DType to, const void* a, void* o, std::int64_t n);

}  // namespace vtrn::runtime::kernels::elementwise
