// The dtypes a `neuron` device holds (capability.h).
#include "vtrn/torch/capability.h"

#include <cstdint>

#include "vtrn/torch/device.h"

namespace vtrn::torch_adapter {

namespace {

bool holds(c10::ScalarType type, bool fp8) {
  using c10::ScalarType;
  if (c10::isQIntType(type)) return false;  // quantized tensors have no neuron backend
  if (c10::isFloat8Type(type)) return fp8;
  switch (type) {
    // Placeholders without a CPU copy kernel either.
    case ScalarType::UInt1:
    case ScalarType::UInt2:
    case ScalarType::UInt3:
    case ScalarType::UInt4:
    case ScalarType::UInt5:
    case ScalarType::UInt6:
    case ScalarType::UInt7:
    case ScalarType::Int1:
    case ScalarType::Int2:
    case ScalarType::Int3:
    case ScalarType::Int4:
    case ScalarType::Int5:
    case ScalarType::Int6:
    case ScalarType::Int7:
      return false;
    default:
      return true;
  }
}

}  // namespace

c10::DeviceCapability device_capability() {
  // FP8 needs Trainium3 (the factories refuse FP8 dtypes elsewhere with that reason).
  const bool fp8 = device_config().instance->chip->name == "Trainium3";
  c10::DeviceCapability capability;
  // The default capability has every dtype; bit i of capability_bits is ScalarType i.
  for (int i = 0; i < static_cast<int>(c10::NUMBER_OF_DEVICE_CAPABILITIES); ++i) {
    if (!holds(static_cast<c10::ScalarType>(i), fp8)) {
      capability.capability_data.capability_bits &= ~(uint64_t{1} << i);
    }
  }
  return capability;
}

}  // namespace vtrn::torch_adapter
