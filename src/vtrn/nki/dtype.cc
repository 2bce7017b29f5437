#include "vtrn/nki/dtype.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace vtrn::nki {
namespace {

struct Named {
  DType dtype;
  std::string_view name;
};
constexpr Named kNames[] = {
    {DType::kFloat32, "float32"},
    {DType::kBFloat16, "bfloat16"},
    {DType::kFloat16, "float16"},
    {DType::kTFloat32, "tfloat32"},
    {DType::kFloat8E4M3, "float8_e4m3"},
    {DType::kFloat8E4M3FN, "float8_e4m3fn"},
    {DType::kFloat8E5M2, "float8_e5m2"},
    {DType::kInt8, "int8"},
    {DType::kInt16, "int16"},
    {DType::kInt32, "int32"},
    {DType::kUInt8, "uint8"},
    {DType::kUInt16, "uint16"},
    {DType::kUInt32, "uint32"},
    {DType::kBool, "bool_"},
};

// An 8-bit float format as a table of its 256 values, encoded by nearest search (ties to the
// even code). Exact and simple; 8-bit types are rare enough that speed does not matter.
struct Fp8Format {
  std::array<float, 256> value{};
  std::vector<std::pair<float, std::uint8_t>> positive;  // finite values >= 0, sorted
  float max_finite = 0;
  bool has_inf = false;
  std::uint8_t nan_code = 0x7f;

  Fp8Format(int exp_bits, int man_bits, bool finite_only) {
    const int bias = (1 << (exp_bits - 1)) - 1;
    const int exp_max = (1 << exp_bits) - 1;
    has_inf = !finite_only;
    for (int code = 0; code < 256; ++code) {
      const int sign = code >> 7;
      const int e = (code >> man_bits) & exp_max;
      const int m = code & ((1 << man_bits) - 1);
      float v;
      if (e == 0) {
        v = std::ldexp(static_cast<float>(m), 1 - bias - man_bits);
      } else if (e == exp_max && !finite_only) {
        v = m == 0 ? std::numeric_limits<float>::infinity()
                   : std::numeric_limits<float>::quiet_NaN();
      } else if (e == exp_max && finite_only && m == (1 << man_bits) - 1) {
        v = std::numeric_limits<float>::quiet_NaN();
      } else {
        v = std::ldexp(static_cast<float>(m + (1 << man_bits)), e - bias - man_bits);
      }
      value[code] = sign ? -v : v;
      if (!sign && std::isfinite(v)) positive.emplace_back(v, static_cast<std::uint8_t>(code));
    }
    std::sort(positive.begin(), positive.end());
    max_finite = positive.back().first;
    nan_code = finite_only ? 0x7f : static_cast<std::uint8_t>((exp_max << man_bits) | 1);
  }

  std::uint8_t encode(float f) const {
    if (std::isnan(f)) return nan_code;
    const std::uint8_t sign = std::signbit(f) ? 0x80 : 0;
    const float a = std::fabs(f);
    if (a > max_finite) {
      // Beyond the largest finite value: round to it if nearer than the next step would be,
      // else overflow to inf (or NaN for the finite-only format), as ml_dtypes does.
      const float step = max_finite - positive[positive.size() - 2].first;
      if (a < max_finite + step / 2) return sign | positive.back().second;
      if (has_inf) return sign | static_cast<std::uint8_t>(nan_code - 1);
      return sign | nan_code;
    }
    auto hi =
        std::lower_bound(positive.begin(), positive.end(), std::make_pair(a, std::uint8_t{0}));
    if (hi == positive.begin()) return sign | hi->second;
    auto lo = hi - 1;
    if (hi == positive.end() || hi->first == a) {
      return sign | (hi == positive.end() ? lo->second : hi->second);
    }
    const float dlo = a - lo->first, dhi = hi->first - a;
    const std::uint8_t code = dlo < dhi   ? lo->second
                              : dhi < dlo ? hi->second
                                          : ((lo->second & 1) ? hi->second : lo->second);
    return sign | code;
  }
};

const Fp8Format& fp8(DType dtype) {
  static const Fp8Format e4m3(4, 3, false), e4m3fn(4, 3, true), e5m2(5, 2, false);
  switch (dtype) {
    case DType::kFloat8E4M3:
      return e4m3;
    case DType::kFloat8E4M3FN:
      return e4m3fn;
    default:
      return e5m2;
  }
}

template <typename T>
T saturate(double v) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (t >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}

template <typename T>
void store_as(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
template <typename T>
T load_as(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

float round_tf32(float f) {
  if (!std::isfinite(f)) return f;
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t lsb = (u >> 13) & 1u;
  u += 0xfffu + lsb;
  u &= ~0x1fffu;
  return std::bit_cast<float>(u);
}

}  // namespace

std::string_view dtype_name(DType dtype) {
  for (const Named& n : kNames) {
    if (n.dtype == dtype) return n.name;
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (const Named& n : kNames) {
    if (n.name == name) return n.dtype;
  }
  if (name == "bool") return DType::kBool;
  std::string known;
  for (const Named& n : kNames) known += (known.empty() ? "" : ", ") + std::string(n.name);
  throw std::invalid_argument("unknown NKI dtype '" + std::string(name) + "'; known: " + known);
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kTFloat32:
    case DType::kInt32:
    case DType::kUInt32:
      return 4;
    case DType::kBFloat16:
    case DType::kFloat16:
    case DType::kInt16:
    case DType::kUInt16:
      return 2;
    default:
      return 1;
  }
}

bool is_float(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kBFloat16:
    case DType::kFloat16:
    case DType::kTFloat32:
    case DType::kFloat8E4M3:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2:
      return true;
    default:
      return false;
  }
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

float bf16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t float_to_fp16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00u;
  if (a >= 65520.0f) return sign | 0x7c00u;  // rounds to inf
  if (a < 6.103515625e-05f) {
    // Subnormal: multiples of 2^-24, round to nearest even.
    const float scaled = a * 16777216.0f;  // a / 2^-24
    return sign | static_cast<std::uint16_t>(std::nearbyint(scaled));
  }
  std::uint32_t ua = std::bit_cast<std::uint32_t>(a);
  const std::uint32_t lsb = (ua >> 13) & 1u;
  ua += 0xfffu + lsb;
  const std::uint32_t exp = (ua >> 23) - 127 + 15;
  const std::uint32_t man = (ua >> 13) & 0x3ffu;
  return sign | static_cast<std::uint16_t>((exp << 10) | man);
}

float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::bit_cast<float>(((exp - 15 + 127) << 23) | (man << 13));
  }
  return sign ? -v : v;
}

double load_element(DType dtype, const void* p) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kTFloat32:
      return load_as<float>(p);
    case DType::kBFloat16:
      return bf16_to_float(load_as<std::uint16_t>(p));
    case DType::kFloat16:
      return fp16_to_float(load_as<std::uint16_t>(p));
    case DType::kFloat8E4M3:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2:
      return fp8(dtype).value[load_as<std::uint8_t>(p)];
    case DType::kInt8:
      return load_as<std::int8_t>(p);
    case DType::kInt16:
      return load_as<std::int16_t>(p);
    case DType::kInt32:
      return load_as<std::int32_t>(p);
    case DType::kUInt8:
    case DType::kBool:
      return load_as<std::uint8_t>(p);
    case DType::kUInt16:
      return load_as<std::uint16_t>(p);
    case DType::kUInt32:
      return load_as<std::uint32_t>(p);
  }
  return 0;
}

void store_element(DType dtype, void* p, double v) {
  switch (dtype) {
    case DType::kFloat32:
      return store_as<float>(p, static_cast<float>(v));
    case DType::kTFloat32:
      return store_as<float>(p, round_tf32(static_cast<float>(v)));
    case DType::kBFloat16:
      return store_as<std::uint16_t>(p, float_to_bf16(static_cast<float>(v)));
    case DType::kFloat16:
      return store_as<std::uint16_t>(p, float_to_fp16(static_cast<float>(v)));
    case DType::kFloat8E4M3:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2:
      return store_as<std::uint8_t>(p, fp8(dtype).encode(static_cast<float>(v)));
    case DType::kInt8:
      return store_as<std::int8_t>(p, saturate<std::int8_t>(v));
    case DType::kInt16:
      return store_as<std::int16_t>(p, saturate<std::int16_t>(v));
    case DType::kInt32:
      return store_as<std::int32_t>(p, saturate<std::int32_t>(v));
    case DType::kUInt8:
      return store_as<std::uint8_t>(p, saturate<std::uint8_t>(v));
    case DType::kBool:
      return store_as<std::uint8_t>(p, std::isnan(v) || v == 0 ? 0 : 1);
    case DType::kUInt16:
      return store_as<std::uint16_t>(p, saturate<std::uint16_t>(v));
    case DType::kUInt32:
      return store_as<std::uint32_t>(p, saturate<std::uint32_t>(v));
  }
}

void fill_sentinel(DType dtype, void* p, std::size_t count) {
  const std::size_t size = dtype_size(dtype);
  unsigned char pattern[4];
  store_element(dtype, pattern, is_float(dtype) ? std::numeric_limits<double>::quiet_NaN() : 4.0);
  auto* out = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < count; ++i) std::memcpy(out + i * size, pattern, size);
}

}  // namespace vtrn::nki
