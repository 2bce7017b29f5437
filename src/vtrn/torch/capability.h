// What a `neuron` device can hold: torch.accelerator.get_device_capability()'s answer.
//
// Promises:
//  * A dtype is listed when a tensor of it can be created on the device and copied between the
//    device and the CPU (the contract of c10::DeviceCapability). Quantized dtypes and the
//    sub-byte placeholders (uint1-7, int1-7, which the CPU cannot copy either) are not; FP8
//    dtypes are listed on Trainium3 instances only, as the device refuses them elsewhere.
#pragma once

#include <c10/core/DeviceCapability.h>
#include <c10/core/ScalarType.h>

namespace vtrn::torch_adapter {

/// The dtypes of the devices this process sees. Raises the configuration error, if any.
c10::DeviceCapability device_capability();

}  // namespace vtrn::torch_adapter
