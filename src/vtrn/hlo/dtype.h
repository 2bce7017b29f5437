// Element types of the StableHLO subset, their MLIR spellings and storage sizes, and the
// float16 / bfloat16 conversions with round-to-nearest-even.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace vtrn::hlo {

/// Element types. The MLIR spelling is in parentheses.
enum class DType : std::uint8_t {
  kPred,  ///< i1, one byte per element (0 or 1)
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,  ///< ui8
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kC64,  ///< complex<f32>
};

/// "f32", "bf16", "i1", "ui8", "complex<f32>".
std::string_view dtype_name(DType dtype);
/// The dtype spelled |name| in MLIR, or nullopt.
std::optional<DType> dtype_from_name(std::string_view name);
/// Bytes per element in memory.
int dtype_size(DType dtype);

inline bool is_float(DType d) {
  return d == DType::kF16 || d == DType::kBF16 || d == DType::kF32 || d == DType::kF64;
}
inline bool is_complex(DType d) { return d == DType::kC64; }
inline bool is_unsigned(DType d) {
  return d == DType::kU8 || d == DType::kU16 || d == DType::kU32 || d == DType::kU64;
}
inline bool is_signed_int(DType d) {
  return d == DType::kI8 || d == DType::kI16 || d == DType::kI32 || d == DType::kI64;
}
inline bool is_integer(DType d) { return is_signed_int(d) || is_unsigned(d); }
inline bool is_pred(DType d) { return d == DType::kPred; }

//===----------------------------------------------------------------------===//
// bfloat16 / float16 <-> float32
//===----------------------------------------------------------------------===//

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// float32 -> bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN.
inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
inline float bf16_to_f32(std::uint16_t h) {
  return bits_float(static_cast<std::uint32_t>(h) << 16);
}

/// float32 -> IEEE float16 bits, round to nearest even (overflow to inf, subnormals kept).
std::uint16_t f32_to_f16(float f);
float f16_to_f32(std::uint16_t h);

}  // namespace vtrn::hlo
