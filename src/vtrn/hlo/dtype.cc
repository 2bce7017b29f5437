#include "vtrn/hlo/dtype.h"

#include <array>

namespace vtrn::hlo {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int size;
};

constexpr std::array<DTypeInfo, 14> kInfos{{
    {DType::kPred, "i1", 1},
    {DType::kI8, "i8", 1},
    {DType::kI16, "i16", 2},
    {DType::kI32, "i32", 4},
    {DType::kI64, "i64", 8},
    {DType::kU8, "ui8", 1},
    {DType::kU16, "ui16", 2},
    {DType::kU32, "ui32", 4},
    {DType::kU64, "ui64", 8},
    {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2},
    {DType::kF32, "f32", 4},
    {DType::kF64, "f64", 8},
    {DType::kC64, "complex<f32>", 8},
}};

}  // namespace

std::string_view dtype_name(DType dtype) { return kInfos[static_cast<int>(dtype)].name; }

int dtype_size(DType dtype) { return kInfos[static_cast<int>(dtype)].size; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& info : kInfos)
    if (info.name == name) return info.dtype;
  // Signless and signed spellings MLIR also accepts.
  if (name == "si8") return DType::kI8;
  if (name == "si16") return DType::kI16;
  if (name == "si32") return DType::kI32;
  if (name == "si64") return DType::kI64;
  return std::nullopt;
}

std::uint16_t f32_to_f16(float f) {
  std::uint32_t u = float_bits(f);
  std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u)
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u)
    return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero) in f16: value = m * 2^-24.
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // < 2^-25: rounds to 0
    int exp = static_cast<int>(abs >> 23);
    std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - exp;  // 113 - exp + 13
    std::uint32_t rounded = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1);
    std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (rounded & 1u))) ++rounded;
    return static_cast<std::uint16_t>(sign | rounded);
  }
  // Normal: rebias exponent (127 -> 15) and round the 13 dropped mantissa bits.
  std::uint32_t v = abs - 0x38000000u;
  v += 0xfffu + ((v >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (v >> 13));
}

float f16_to_f32(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal: mant * 2^-24.
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

}  // namespace vtrn::hlo
