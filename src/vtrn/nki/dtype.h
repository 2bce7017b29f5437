// The element types an NKI tile can hold, their storage and their conversions.
//
// Values are stored in the declared type (a bfloat16 tile holds 2-byte bfloat16 values), so
// every write rounds the way the hardware does. Engines compute in float32 (SDK
// trainium_inferentia2_arch.rst: "Arithmetic operations are performed in FP32, with automatic
// zero-overhead input and output casting"); the interpreter reads operands into double buffers
// (which hold every float32 and int32 exactly) and writes results through float32 for float
// destinations, so a result is rounded once to float32 and then to the destination type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vtrn::nki {

enum class DType : std::uint8_t {
  kFloat32,
  kBFloat16,
  kFloat16,
  kTFloat32,      ///< stored in 4 bytes, mantissa rounded to 10 bits
  kFloat8E4M3,    ///< 1-4-3, IEEE-like (inf and NaN)
  kFloat8E4M3FN,  ///< 1-4-3, no inf, NaN = S.1111.111
  kFloat8E5M2,    ///< 1-5-2, IEEE-like
  kInt8,
  kInt16,
  kInt32,
  kUInt8,
  kUInt16,
  kUInt32,
  kBool,  ///< one byte, 0 or 1
};

/// The NKI spelling: "float32", "bfloat16", "float8_e4m3fn", "int32", "bool_" ...
std::string_view dtype_name(DType dtype);
/// Parses a name as dtype_name writes it; also "bool" and numpy's "float8_e4m3" spelling.
/// Throws std::invalid_argument listing the known names.
DType parse_dtype(std::string_view name);
std::size_t dtype_size(DType dtype);
bool is_float(DType dtype);

/// Decodes the element at |p| to double (exact for every type).
double load_element(DType dtype, const void* p);
/// Encodes |v| into the element at |p|: floats round to nearest even (through float32 for the
/// narrow float types), integers truncate toward zero and saturate, NaN becomes 0.
void store_element(DType dtype, void* p, double v);

/// Writes |count| copies of the simulator's fresh-allocation sentinel: NaN for float types,
/// 4 for integer types (SDK nki/guides/nki_simulator.rst, "Uninitialized Memory Detection").
void fill_sentinel(DType dtype, void* p, std::size_t count);

/// float32 -> bfloat16 bits, round to nearest even, NaN kept quiet.
std::uint16_t float_to_bf16(float f);
float bf16_to_float(std::uint16_t b);
std::uint16_t float_to_fp16(float f);
float fp16_to_float(std::uint16_t h);

}  // namespace vtrn::nki
