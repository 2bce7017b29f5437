// The `neuron` device as PyTorch sees it: device indices, the current device, and the
// allocator that backs device memory.
//
// Promises:
//  * device_count() never throws (PyTorch calls it from noexcept contexts) and is fixed for
//    the life of the process.
//  * The current device is per thread, as on CUDA: the autograd engine gives each device its
//    own worker thread and sets the device there.
//  * Device memory is host memory, 64-byte aligned, so a device tensor can be viewed as a CPU
//    tensor over the same bytes without copying.
#pragma once

#include <cstdint>

#include <c10/core/Device.h>

namespace vtrn::torch_adapter {

/// Logical NeuronCores this process sees.
c10::DeviceIndex device_count() noexcept;

/// The calling thread's current device index (0 until set).
c10::DeviceIndex current_device() noexcept;

/// Makes |index| the calling thread's current device. Throws a c10::Error naming the valid
/// range when |index| is out of it.
void set_device(c10::DeviceIndex index);

/// Throws a c10::Error naming the valid range unless 0 <= |index| < device_count().
void check_device_index(c10::DeviceIndex index);

/// Waits for all work queued on |index|. Execution is synchronous today, so this only
/// validates the index; the runtime issue adds the queue it waits for.
void synchronize(c10::DeviceIndex index);

/// Seeds the default generator of device |index|.
void manual_seed(c10::DeviceIndex index, uint64_t seed);

}  // namespace vtrn::torch_adapter
