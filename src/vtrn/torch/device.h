// The `neuron` device as PyTorch sees it: the visible cores, the current device and stream,
// device memory, and the queues kernels enqueue work on.
//
// Promises:
//  * device_count() never throws (PyTorch calls it from noexcept contexts) and is fixed for
//    the life of the process. A bad Neuron environment variable makes it 0; every other call
//    then raises that configuration error.
//  * The current device and each device's current stream are per thread, as on CUDA.
//  * Device memory is host memory, 64-byte aligned and charged to the core's HBM bank, so a
//    device tensor can be viewed as a CPU tensor over the same bytes without copying.
//  * Work enqueued on a stream runs in order on that stream's worker; host reads wait for it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include "vtrn/runtime/device_config.h"
#include "vtrn/runtime/device_memory.h"
#include "vtrn/runtime/stream.h"

namespace vtrn::torch_adapter {

/// The configuration read from the environment at first use. Throws its error if invalid.
const runtime::DeviceConfig& device_config();

/// Empty when the environment is valid, else the error that disables the device.
const std::string& device_config_error();

/// Logical NeuronCores this process sees (0 if the environment is invalid). An int: at LNC1
/// a trn2.48xlarge has 128, one more than c10::DeviceIndex (int8) can count.
int device_count() noexcept;

/// device_count() for PyTorch's interfaces, capped at 127. Indices 0-127 are all valid
/// DeviceIndex values; only the count 128 does not fit.
c10::DeviceIndex torch_device_count() noexcept;

/// The calling thread's current device index (0 until set).
c10::DeviceIndex current_device() noexcept;

/// Makes |index| the calling thread's current device. Throws a c10::IndexError naming the
/// valid range when |index| is out of it.
void set_device(c10::DeviceIndex index);

/// Throws a c10::IndexError naming the valid range unless 0 <= |index| < device_count().
void check_device_index(c10::DeviceIndex index);

/// The device memory of every visible core.
runtime::DeviceMemory& device_memory();

/// The calling thread's current stream on |device|.
c10::Stream current_stream(c10::DeviceIndex device);

/// The runtime queue behind |stream|.
runtime::Stream& runtime_stream(const c10::Stream& stream);

/// Queues |work| on the current stream of |device|. Under NEURON_LAUNCH_BLOCKING=1 it waits
/// for the work and raises its error at once. |op| must be a string literal.
void enqueue(c10::DeviceIndex device, const char* op, std::function<void()> work);

/// Waits for the current stream of |device|; raises (c10::Error) the first error of its work.
void sync_current_stream(c10::DeviceIndex device);

/// Waits for every stream of |device|; raises the first error of their work.
void synchronize(c10::DeviceIndex index);

/// Seeds the default generator of device |index|.
void manual_seed(c10::DeviceIndex index, uint64_t seed);

/// The default generator's state: 16 bytes, seed then offset (little-endian uint64s).
std::string rng_state(c10::DeviceIndex index);
void set_rng_state(c10::DeviceIndex index, const std::string& state);
uint64_t initial_seed(c10::DeviceIndex index);

}  // namespace vtrn::torch_adapter
