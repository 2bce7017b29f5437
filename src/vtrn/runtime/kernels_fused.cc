// Fused elementwise loops (see executor.h): chunked, one tight loop per op.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>

#include "vtrn/runtime/executor.h"
#include "vtrn/runtime/kernels.h"
#include "vtrn/runtime/thread_pool.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using hlo::OpKind;
using Cls = FusedProgram::Cls;

namespace {

constexpr std::int64_t kChunk = 1024;

Cls cls_of(DType d) {
  if (d == DType::kF64) return Cls::kF64;
  if (d == DType::kF32 || d == DType::kBF16 || d == DType::kF16) return Cls::kF32;
  if (hlo::is_complex(d))
    throw ExecError("complex64 elementwise arithmetic is not supported by the vtrn executor");
  return Cls::kI64;
}

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

// Reads element |i| of storage |dtype| into the chunk's class.
template <typename T>
T load_elem(DType d, const std::uint8_t* p, std::int64_t i);

template <>
float load_elem<float>(DType d, const std::uint8_t* p, std::int64_t i) {
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
double load_elem<double>(DType, const std::uint8_t* p, std::int64_t i) {
  double f;
  std::memcpy(&f, p + 8 * i, 8);
  return f;
}
template <>
std::int64_t load_elem<std::int64_t>(DType d, const std::uint8_t* p, std::int64_t i) {
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

// Contiguous load of n elements starting at element |start|.
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

template <typename T>
T fmax_nan(T a, T b) {
  return (a > b || a != a) ? a : b;
}
template <typename T>
T fmin_nan(T a, T b) {
  return (a < b || a != a) ? a : b;
}

template <typename T>
void unary_float(OpKind k, const T* __restrict a, T* __restrict o, std::int64_t n) {
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
void binary_float(OpKind k, const T* __restrict a, const T* __restrict b, T* __restrict o,
                  std::int64_t n) {
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
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::pow(a[i], b[i]);
      return;
    case OpKind::kRemainder:
      for (std::int64_t i = 0; i < n; ++i) o[i] = std::fmod(a[i], b[i]);
      return;
    default:
      throw ExecError("stablehlo." + std::string(hlo::op_name(k)) +
                      " is not supported for floating-point operands");
  }
}

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
void compare(hlo::Comparison c, const T* a, const T* b, std::int64_t* o, std::int64_t n) {
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
void select(const std::int64_t* p, const T* a, const T* b, T* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = p[i] ? a[i] : b[i];
}

template <typename T>
void clamp(const T* lo, const T* x, const T* hi, T* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    T v = x[i] < lo[i] ? lo[i] : x[i];
    o[i] = v > hi[i] ? hi[i] : v;
  }
}

template <typename F>
std::int64_t float_to_int(F v, DType d) {
  if (v != v) return 0;
  double lo, hi;
  switch (d) {
    case DType::kPred:
      return v != 0;
    case DType::kI8:
      lo = -128;
      hi = 127;
      break;
    case DType::kI16:
      lo = -32768;
      hi = 32767;
      break;
    case DType::kI32:
      lo = -2147483648.0;
      hi = 2147483647.0;
      break;
    case DType::kU8:
      lo = 0;
      hi = 255;
      break;
    case DType::kU16:
      lo = 0;
      hi = 65535;
      break;
    case DType::kU32:
      lo = 0;
      hi = 4294967295.0;
      break;
    case DType::kU64:
      lo = 0;
      hi = 9223372036854775807.0;
      break;
    default:
      lo = -9223372036854775808.0;
      hi = 9223372036854775807.0;
      break;
  }
  const double x = static_cast<double>(v);
  if (x <= lo) return static_cast<std::int64_t>(lo);
  if (x >= hi)
    return d == DType::kI64 || d == DType::kU64 ? std::numeric_limits<std::int64_t>::max()
                                                : static_cast<std::int64_t>(hi);
  return static_cast<std::int64_t>(x);
}

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

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

}  // namespace

FusedProgram::FusedProgram(const hlo::Block& b, const std::vector<int>& ops,
                           const std::vector<const hlo::Literal*>& constant_of) {
  const hlo::Op& root = b.ops[ops.back()];
  reduce_ = root.kind == OpKind::kReduce;
  domain_ = reduce_ ? b.type(root.operands[0]).dims : b.type(root.results[0]).dims;
  n_ = 1;
  for (std::int64_t d : domain_) n_ *= d;
  std::vector<int> slot_of(b.types.size(), -1);
  auto new_slot = [&](DType d) {
    slots_.push_back({cls_of(d), d});
    return static_cast<int>(slots_.size()) - 1;
  };
  // A slot reading block value |v| from outside the loop.
  auto input_slot = [&](int v) {
    if (slot_of[v] >= 0) return slot_of[v];
    const hlo::TensorType& t = b.type(v);
    const int s = new_slot(t.dtype);
    Load l{s, v, t.dtype, 0, {}};
    const hlo::Literal* c = v < static_cast<int>(constant_of.size()) ? constant_of[v] : nullptr;
    if (c && (c->splat || t.num_elements() == 1)) {
      l.mode = 3;
      l.cd = c->get_double(0);
      l.ci = c->get_int(0);
    } else if (t.num_elements() == 1 && !(t.dims == domain_ && n_ == 1)) {
      l.mode = 1;
      input_values_.push_back(v);
    } else if (t.dims == domain_) {
      l.mode = 0;
      input_values_.push_back(v);
    } else {
      throw ExecError("fused loop: operand " + t.str() + " does not match the loop domain");
    }
    loads_.push_back(l);
    slot_of[v] = s;
    return s;
  };
  for (int oi : ops) {
    const hlo::Op& op = b.ops[oi];
    if (op.kind == OpKind::kBroadcastInDim) {
      const int v = op.operands[0];
      const hlo::TensorType& t = b.type(v);
      const int s = new_slot(t.dtype);
      Load l{s, v, t.dtype, 2, std::vector<std::int64_t>(domain_.size(), 0)};
      const auto src = row_major_strides(t.dims);
      for (std::size_t i = 0; i < op.dims.size(); ++i)
        if (t.dims[i] != 1) l.strides[op.dims[i]] = src[i];
      const hlo::Literal* c = v < static_cast<int>(constant_of.size()) ? constant_of[v] : nullptr;
      if (c && (c->splat || t.num_elements() == 1)) {
        l.mode = 3;
        l.cd = c->get_double(0);
        l.ci = c->get_int(0);
      } else if (t.num_elements() == 1) {
        l.mode = 1;
        input_values_.push_back(v);
      } else {
        input_values_.push_back(v);
      }
      loads_.push_back(l);
      slot_of[op.results[0]] = s;
      continue;
    }
    if (op.kind == OpKind::kReduce) {
      reduce_kind_ = hlo::match_reduce_region(*op.regions[0]);
      root_slot_ = input_slot(op.operands[0]);
      const int init = op.operands[1];
      const hlo::Literal* c =
          init < static_cast<int>(constant_of.size()) ? constant_of[init] : nullptr;
      if (c) {
        init_is_const_ = true;
        init_const_ = c->get_double(0);
        init_const_i_ = c->get_int(0);
      } else {
        init_value_ = init;
        input_values_.push_back(init);
      }
      const hlo::TensorType& out = b.type(op.results[0]);
      out_dtype_ = out.dtype;
      out_n_ = out.num_elements();
      output_value_ = op.results[0];
      // Output strides per domain dim.
      std::vector<bool> reduced(domain_.size(), false);
      for (std::int64_t d : op.dims) reduced[d] = true;
      out_strides_.assign(domain_.size(), 0);
      std::int64_t s = 1;
      for (int d = static_cast<int>(domain_.size()) - 1; d >= 0; --d)
        if (!reduced[d]) {
          out_strides_[d] = s;
          s *= domain_[d];
        }
      // Suffix reduction?
      bool suffix = true;
      bool seen_kept = false;
      for (int d = static_cast<int>(domain_.size()) - 1; d >= 0; --d) {
        if (!reduced[d])
          seen_kept = true;
        else if (seen_kept)
          suffix = false;
      }
      inner_ = 0;
      if (suffix) {
        inner_ = 1;
        for (std::size_t d = 0; d < domain_.size(); ++d)
          if (reduced[d]) inner_ *= domain_[d];
      }
      continue;
    }
    Instr in{op.kind, -1};
    in.in_dtype = b.type(op.operands[0]).dtype;
    if (op.kind == OpKind::kSelect) in.in_dtype = b.type(op.operands[1]).dtype;
    if (op.kind == OpKind::kCompare) in.cmp = op.comparison;
    in.a = input_slot(op.operands[0]);
    if (op.operands.size() > 1) in.b = input_slot(op.operands[1]);
    if (op.operands.size() > 2) in.c = input_slot(op.operands[2]);
    in.dst = new_slot(b.type(op.results[0]).dtype);
    slot_of[op.results[0]] = in.dst;
    instrs_.push_back(in);
  }
  if (!reduce_) {
    output_value_ = root.results[0];
    out_dtype_ = b.type(output_value_).dtype;
    root_slot_ = slot_of[output_value_];
    out_n_ = n_;
  }
  // Values loaded more than once (e.g. an input used by two loads) are listed once.
  std::sort(input_values_.begin(), input_values_.end());
  input_values_.erase(std::unique(input_values_.begin(), input_values_.end()), input_values_.end());
}

namespace {

template <typename T>
void combine(hlo::ReduceKind k, T* acc, std::int64_t oi, T v) {
  switch (k) {
    case hlo::ReduceKind::kAdd:
      acc[oi] = acc[oi] + v;
      break;
    case hlo::ReduceKind::kMul:
      acc[oi] = acc[oi] * v;
      break;
    case hlo::ReduceKind::kMax:
      acc[oi] = fmax_nan(acc[oi], v);
      break;
    case hlo::ReduceKind::kMin:
      acc[oi] = fmin_nan(acc[oi], v);
      break;
    default:
      break;
  }
}

template <>
void combine<std::int64_t>(hlo::ReduceKind k, std::int64_t* acc, std::int64_t oi, std::int64_t v) {
  switch (k) {
    case hlo::ReduceKind::kAdd:
      acc[oi] = static_cast<std::int64_t>(static_cast<std::uint64_t>(acc[oi]) +
                                          static_cast<std::uint64_t>(v));
      break;
    case hlo::ReduceKind::kMul:
      acc[oi] = static_cast<std::int64_t>(static_cast<std::uint64_t>(acc[oi]) *
                                          static_cast<std::uint64_t>(v));
      break;
    case hlo::ReduceKind::kMax:
      acc[oi] = std::max(acc[oi], v);
      break;
    case hlo::ReduceKind::kMin:
      acc[oi] = std::min(acc[oi], v);
      break;
    case hlo::ReduceKind::kAnd:
      acc[oi] = acc[oi] & v;
      break;
    case hlo::ReduceKind::kOr:
      acc[oi] = acc[oi] | v;
      break;
    default:
      break;
  }
}

template <typename T>
void accumulate(hlo::ReduceKind k, T* acc, const T* v, std::int64_t n, std::int64_t start,
                std::int64_t inner, const std::vector<std::int64_t>& domain,
                const std::vector<std::int64_t>& out_strides) {
  if (inner > 0) {
    std::int64_t i = 0;
    while (i < n) {
      const std::int64_t g = start + i;
      const std::int64_t oi = g / inner;
      const std::int64_t run = std::min(n - i, (oi + 1) * inner - g);
      if (k == hlo::ReduceKind::kAdd) {
        T s = acc[oi];
        for (std::int64_t j = 0; j < run; ++j) s = s + v[i + j];
        acc[oi] = s;
      } else {
        for (std::int64_t j = 0; j < run; ++j) combine(k, acc, oi, v[i + j]);
      }
      i += run;
    }
    return;
  }
  // General: odometer over the domain.
  const int r = static_cast<int>(domain.size());
  std::vector<std::int64_t> idx(static_cast<std::size_t>(r));
  std::int64_t rem = start, oi = 0;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % domain[d];
    rem /= domain[d];
    oi += idx[d] * out_strides[d];
  }
  for (std::int64_t i = 0; i < n; ++i) {
    combine(k, acc, oi, v[i]);
    for (int d = r - 1; d >= 0; --d) {
      oi += out_strides[d];
      if (++idx[d] < domain[d]) break;
      oi -= out_strides[d] * domain[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

void FusedProgram::run_range(const std::vector<Buf>& values, std::uint8_t* out, std::int64_t lo,
                             std::int64_t hi, void* acc) const {
  const std::size_t ns = slots_.size();
  std::unique_ptr<std::int64_t[]> scratch(new std::int64_t[ns * kChunk]);
  // A contiguous load that would only copy (same type in memory and in the loop) reads the
  // input in place: slots are never reused, so no instruction writes a load's slot.
  std::vector<void*> in_place(ns, nullptr);
  auto slot_ptr = [&](int s) -> void* {
    void* p = in_place[static_cast<std::size_t>(s)];
    return p != nullptr ? p : scratch.get() + static_cast<std::size_t>(s) * kChunk;
  };
  const int rank = static_cast<int>(domain_.size());
  std::vector<std::int64_t> idx(static_cast<std::size_t>(rank));
  // Constant and scalar slots are filled once: no op writes them.
  for (const Load& l : loads_) {
    if (l.mode != 3 && l.mode != 1) continue;
    void* dst = slot_ptr(l.slot);
    const Cls c = slots_[l.slot].cls;
    double dv = l.cd;
    std::int64_t iv = l.ci;
    if (l.mode == 1) {
      const std::uint8_t* p = values[l.value].ptr;
      if (c == Cls::kI64)
        iv = load_elem<std::int64_t>(l.dtype, p, 0);
      else if (c == Cls::kF64)
        dv = load_elem<double>(l.dtype, p, 0);
      else
        dv = load_elem<float>(l.dtype, p, 0);
    }
    if (c == Cls::kF32)
      std::fill_n(static_cast<float*>(dst), kChunk, static_cast<float>(dv));
    else if (c == Cls::kF64)
      std::fill_n(static_cast<double*>(dst), kChunk, dv);
    else
      std::fill_n(static_cast<std::int64_t*>(dst), kChunk, iv);
  }
  for (std::int64_t start = lo; start < hi; start += kChunk) {
    const std::int64_t len = std::min(kChunk, hi - start);
    for (const Load& l : loads_) {
      if (l.mode == 3 || l.mode == 1) continue;
      void* dst = slot_ptr(l.slot);
      const Cls c = slots_[l.slot].cls;
      const std::uint8_t* p = values[l.value].ptr;
      if (l.mode == 0) {
        const bool same = (c == Cls::kF32 && l.dtype == DType::kF32) ||
                          (c == Cls::kF64 && l.dtype == DType::kF64) ||
                          (c == Cls::kI64 && l.dtype == DType::kI64);
        if (same && l.slot != root_slot_) {
          in_place[static_cast<std::size_t>(l.slot)] =
              const_cast<std::uint8_t*>(p) + start * hlo::dtype_size(l.dtype);
          continue;
        }
        load_contiguous(l.dtype, p, start, len, dst);
        continue;
      }
      // Strided (broadcast) load: odometer over the domain.
      std::int64_t rem = start, off = 0;
      for (int d = rank - 1; d >= 0; --d) {
        idx[d] = rem % domain_[d];
        rem /= domain_[d];
        off += idx[d] * l.strides[d];
      }
      const std::int64_t last = rank > 0 ? domain_[rank - 1] : 1;
      const std::int64_t last_stride = rank > 0 ? l.strides[rank - 1] : 0;
      std::int64_t i = 0;
      while (i < len) {
        // Run along the last dimension.
        const std::int64_t run = rank > 0 ? std::min(len - i, last - idx[rank - 1]) : len;
        if (c == Cls::kF32) {
          float* o = static_cast<float*>(dst) + i;
          if (last_stride == 0)
            std::fill_n(o, run, load_elem<float>(l.dtype, p, off));
          else
            for (std::int64_t j = 0; j < run; ++j)
              o[j] = load_elem<float>(l.dtype, p, off + j * last_stride);
        } else if (c == Cls::kF64) {
          double* o = static_cast<double*>(dst) + i;
          for (std::int64_t j = 0; j < run; ++j)
            o[j] = load_elem<double>(l.dtype, p, off + j * last_stride);
        } else {
          std::int64_t* o = static_cast<std::int64_t*>(dst) + i;
          for (std::int64_t j = 0; j < run; ++j)
            o[j] = load_elem<std::int64_t>(l.dtype, p, off + j * last_stride);
        }
        i += run;
        if (rank == 0) break;
        // Advance the odometer by |run| along the last dim (wraps exactly to 0).
        off += run * last_stride;
        idx[rank - 1] += run;
        for (int d = rank - 1; d > 0 && idx[d] == domain_[d]; --d) {
          off -= domain_[d] * l.strides[d];
          idx[d] = 0;
          ++idx[d - 1];
          off += l.strides[d - 1];
        }
      }
    }
    // A float32 result is computed straight into the output, unless the output overlaps an
    // input read in place in this chunk (the loops take their pointers as __restrict).
    if (!reduce_ && out_dtype_ == DType::kF32 && slots_[root_slot_].dtype == DType::kF32 &&
        slots_[root_slot_].cls == Cls::kF32 && !instrs_.empty() &&
        instrs_.back().dst == root_slot_) {
      std::uint8_t* dst = out + start * 4;
      bool overlap = false;
      for (std::size_t k = 0; k < ns && !overlap; ++k) {
        if (k == static_cast<std::size_t>(root_slot_) || in_place[k] == nullptr) continue;
        const auto* p = static_cast<const std::uint8_t*>(in_place[k]);
        overlap = p < dst + len * 4 && dst < p + len * hlo::dtype_size(slots_[k].dtype);
      }
      in_place[static_cast<std::size_t>(root_slot_)] = overlap ? nullptr : dst;
    }
    for (const Instr& in : instrs_) {
      void* o = slot_ptr(in.dst);
      const Cls ci = cls_of(in.in_dtype);
      const DType od = slots_[in.dst].dtype;
      if (in.kind == OpKind::kConvert) {
        convert(in.in_dtype, od, slot_ptr(in.a), o, len);
        continue;
      }
      if (in.kind == OpKind::kCompare) {
        auto* po = static_cast<std::int64_t*>(o);
        if (ci == Cls::kF32)
          compare(in.cmp, static_cast<float*>(slot_ptr(in.a)), static_cast<float*>(slot_ptr(in.b)),
                  po, len);
        else if (ci == Cls::kF64)
          compare(in.cmp, static_cast<double*>(slot_ptr(in.a)),
                  static_cast<double*>(slot_ptr(in.b)), po, len);
        else if (in.in_dtype == DType::kU64) {
          const auto* a = static_cast<const std::uint64_t*>(slot_ptr(in.a));
          const auto* b = static_cast<const std::uint64_t*>(slot_ptr(in.b));
          compare(in.cmp, a, b, po, len);
        } else
          compare(in.cmp, static_cast<std::int64_t*>(slot_ptr(in.a)),
                  static_cast<std::int64_t*>(slot_ptr(in.b)), po, len);
        continue;
      }
      if (in.kind == OpKind::kSelect) {
        const auto* p = static_cast<const std::int64_t*>(slot_ptr(in.a));
        if (ci == Cls::kF32)
          select(p, static_cast<float*>(slot_ptr(in.b)), static_cast<float*>(slot_ptr(in.c)),
                 static_cast<float*>(o), len);
        else if (ci == Cls::kF64)
          select(p, static_cast<double*>(slot_ptr(in.b)), static_cast<double*>(slot_ptr(in.c)),
                 static_cast<double*>(o), len);
        else
          select(p, static_cast<std::int64_t*>(slot_ptr(in.b)),
                 static_cast<std::int64_t*>(slot_ptr(in.c)), static_cast<std::int64_t*>(o), len);
        continue;
      }
      if (in.kind == OpKind::kClamp) {
        if (ci == Cls::kF32)
          clamp(static_cast<float*>(slot_ptr(in.a)), static_cast<float*>(slot_ptr(in.b)),
                static_cast<float*>(slot_ptr(in.c)), static_cast<float*>(o), len);
        else if (ci == Cls::kF64)
          clamp(static_cast<double*>(slot_ptr(in.a)), static_cast<double*>(slot_ptr(in.b)),
                static_cast<double*>(slot_ptr(in.c)), static_cast<double*>(o), len);
        else
          clamp(static_cast<std::int64_t*>(slot_ptr(in.a)),
                static_cast<std::int64_t*>(slot_ptr(in.b)),
                static_cast<std::int64_t*>(slot_ptr(in.c)), static_cast<std::int64_t*>(o), len);
        continue;
      }
      const bool bin = in.b >= 0;
      if (ci == Cls::kF32) {
        auto* fo = static_cast<float*>(o);
        if (bin)
          binary_float(in.kind, static_cast<float*>(slot_ptr(in.a)),
                       static_cast<float*>(slot_ptr(in.b)), fo, len);
        else
          unary_float(in.kind, static_cast<float*>(slot_ptr(in.a)), fo, len);
        round_f32(od, fo, len);
      } else if (ci == Cls::kF64) {
        auto* fo = static_cast<double*>(o);
        if (bin)
          binary_float(in.kind, static_cast<double*>(slot_ptr(in.a)),
                       static_cast<double*>(slot_ptr(in.b)), fo, len);
        else
          unary_float(in.kind, static_cast<double*>(slot_ptr(in.a)), fo, len);
      } else {
        auto* io = static_cast<std::int64_t*>(o);
        if (bin)
          binary_int(in.kind, in.in_dtype, static_cast<std::int64_t*>(slot_ptr(in.a)),
                     static_cast<std::int64_t*>(slot_ptr(in.b)), io, len);
        else
          unary_int(in.kind, in.in_dtype, static_cast<std::int64_t*>(slot_ptr(in.a)), io, len);
        wrap_i64(od, io, len);
      }
    }
    if (!reduce_) {
      if (in_place[static_cast<std::size_t>(root_slot_)] == nullptr)
        store_contiguous(out_dtype_, slot_ptr(root_slot_), len, out, start);
      continue;
    }
    const Cls c = slots_[root_slot_].cls;
    if (c == Cls::kF32)
      accumulate(reduce_kind_, static_cast<float*>(acc), static_cast<float*>(slot_ptr(root_slot_)),
                 len, start, inner_, domain_, out_strides_);
    else if (c == Cls::kF64)
      accumulate(reduce_kind_, static_cast<double*>(acc),
                 static_cast<double*>(slot_ptr(root_slot_)), len, start, inner_, domain_,
                 out_strides_);
    else
      accumulate(reduce_kind_, static_cast<std::int64_t*>(acc),
                 static_cast<std::int64_t*>(slot_ptr(root_slot_)), len, start, inner_, domain_,
                 out_strides_);
  }
}

void FusedProgram::run(const std::vector<Buf>& values, std::uint8_t* out, int threads) const {
  constexpr std::int64_t kParallelMin = 1 << 16;
  if (!reduce_) {
    if (threads <= 1 || n_ < kParallelMin) {
      run_range(values, out, 0, n_, nullptr);
      return;
    }
    const std::int64_t per = ((n_ / threads) + kChunk - 1) / kChunk * kChunk;
    parallel_for(threads, [&](int t) {
      const std::int64_t lo = std::min(n_, per * t),
                         hi = t + 1 == threads ? n_ : std::min(n_, per * (t + 1));
      if (lo < hi) run_range(values, out, lo, hi, nullptr);
    });
    return;
  }
  // Reduce: accumulators of the loop's class, initialized with the init value.
  const Cls c = slots_[root_slot_].cls;
  std::unique_ptr<std::int64_t[]> acc(
      new std::int64_t[static_cast<std::size_t>(std::max<std::int64_t>(out_n_, 1))]);
  double init_d = init_const_;
  std::int64_t init_i = init_const_i_;
  if (!init_is_const_) {
    const hlo::DType d = slots_[root_slot_].dtype;
    if (c == Cls::kI64)
      init_i = load_elem<std::int64_t>(d, values[init_value_].ptr, 0);
    else if (c == Cls::kF64)
      init_d = load_elem<double>(d, values[init_value_].ptr, 0);
    else
      init_d = load_elem<float>(d, values[init_value_].ptr, 0);
  }
  if (c == Cls::kF32)
    std::fill_n(reinterpret_cast<float*>(acc.get()), out_n_, static_cast<float>(init_d));
  else if (c == Cls::kF64)
    std::fill_n(reinterpret_cast<double*>(acc.get()), out_n_, init_d);
  else
    std::fill_n(acc.get(), out_n_, init_i);
  if (threads > 1 && inner_ > 0 && n_ >= kParallelMin && out_n_ >= threads) {
    const std::int64_t rows = out_n_ / threads;
    parallel_for(threads, [&](int t) {
      const std::int64_t lo = rows * t * inner_,
                         hi = (t + 1 == threads ? out_n_ : rows * (t + 1)) * inner_;
      run_range(values, out, lo, hi, acc.get());
    });
  } else if (n_ > 0) {
    run_range(values, out, 0, n_, acc.get());
  }
  store_contiguous(out_dtype_, acc.get(), out_n_, out, 0);
}

}  // namespace vtrn::runtime::kernels
