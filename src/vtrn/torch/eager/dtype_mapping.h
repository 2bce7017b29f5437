// The mapping between PyTorch's scalar types and HLO element types.
//
// Promises:
//  * to_hlo() is empty for the scalar types lowerings do not take (complex, FP8, quantized...):
//    a call with such a tensor runs through the CPU fallback. complex64 maps only for the
//    lowerings that take it as float32 pairs.
//  * to_torch(to_hlo(t)) == t for every t to_hlo() maps.
//  * Both are inline: they run for every tensor of every eager call.
#pragma once

#include <optional>

#include <ATen/core/ivalue.h>
#include <c10/core/ScalarType.h>
#include <c10/util/overflows.h>

#include "vtrn/hlo/dtype.h"

namespace vtrn::torch_adapter::eager {

inline std::optional<hlo::DType> to_hlo(at::ScalarType t) {
  switch (t) {
    case at::kBool:
      return hlo::DType::kPred;
    case at::kChar:
      return hlo::DType::kI8;
    case at::kShort:
      return hlo::DType::kI16;
    case at::kInt:
      return hlo::DType::kI32;
    case at::kLong:
      return hlo::DType::kI64;
    case at::kByte:
      return hlo::DType::kU8;
    case at::kUInt16:
      return hlo::DType::kU16;
    case at::kUInt32:
      return hlo::DType::kU32;
    case at::kUInt64:
      return hlo::DType::kU64;
    case at::kHalf:
      return hlo::DType::kF16;
    case at::kBFloat16:
      return hlo::DType::kBF16;
    case at::kFloat:
      return hlo::DType::kF32;
    case at::kDouble:
      return hlo::DType::kF64;
    default:
      return std::nullopt;
  }
}

/// to_hlo(), and complex64 for a lowering that takes it as float32 pairs
/// (OpLowering::complex_pairs).
inline std::optional<hlo::DType> to_hlo(at::ScalarType t, bool complex_pairs) {
  if (complex_pairs && t == at::kComplexFloat) return hlo::DType::kC64;
  return to_hlo(t);
}

/// The dtypes |v| (a Scalar) converts to without overflow as Scalar::to<T>() checks it (an
/// integer may wrap into an unsigned type, as in `a - b`), one bit per hlo::DType.
inline int64_t fitting_dtypes(const c10::IValue& v) {
  auto fits = [](auto value) {
    auto bit = [](hlo::DType d) { return int64_t{1} << static_cast<int>(d); };
    int64_t mask = bit(hlo::DType::kPred) | bit(hlo::DType::kF64);
    mask |= c10::overflows<uint8_t>(value) ? 0 : bit(hlo::DType::kU8);
    mask |= c10::overflows<int8_t>(value) ? 0 : bit(hlo::DType::kI8);
    mask |= c10::overflows<int16_t>(value) ? 0 : bit(hlo::DType::kI16);
    mask |= c10::overflows<int32_t>(value) ? 0 : bit(hlo::DType::kI32);
    mask |= c10::overflows<int64_t>(value) ? 0 : bit(hlo::DType::kI64);
    mask |= c10::overflows<c10::Half>(value) ? 0 : bit(hlo::DType::kF16);
    mask |= c10::overflows<c10::BFloat16>(value) ? 0 : bit(hlo::DType::kBF16);
    mask |= c10::overflows<float>(value) ? 0 : bit(hlo::DType::kF32);
    return mask;
  };
  if (v.isDouble()) return fits(v.toDouble());
  if (v.isInt()) return fits(v.toInt());
  return fits(v.toBool());
}

inline at::ScalarType to_torch(hlo::DType d) {
  switch (d) {
    case hlo::DType::kPred:
      return at::kBool;
    case hlo::DType::kI8:
      return at::kChar;
    case hlo::DType::kI16:
      return at::kShort;
    case hlo::DType::kI32:
      return at::kInt;
    case hlo::DType::kI64:
      return at::kLong;
    case hlo::DType::kU8:
      return at::kByte;
    case hlo::DType::kU16:
      return at::kUInt16;
    case hlo::DType::kU32:
      return at::kUInt32;
    case hlo::DType::kU64:
      return at::kUInt64;
    case hlo::DType::kF16:
      return at::kHalf;
    case hlo::DType::kBF16:
      return at::kBFloat16;
    case hlo::DType::kF32:
      return at::kFloat;
    case hlo::DType::kF64:
      return at::kDouble;
    case hlo::DType::kC64:
      return at::kComplexFloat;
  }
  return at::kFloat;
}

}  // namespace vtrn::torch_adapter::eager
