// The `neuron` device registry as PyTorch sees it: the visible cores, the calling thread's
// current device, and device memory.
//
// Promises:
//  * device_count() never throws (PyTorch calls it from noexcept contexts) and is fixed for
//    the life of the process. A bad Neuron environment variable makes it 0; every other call
//    then raises that configuration error.
//  * The current device is per thread, as on CUDA. A thread that never chose one uses the
//    process's device: neuron:0 until the launcher or the first process group chooses the
//    local rank's (as TorchNeuron does), so worker threads follow the process.
//  * Every process of a node sees every core of the node. A launcher's worker (torchrun,
//    torch.multiprocessing) claims each core it allocates on, and a second worker of the node
//    allocating on the same core is refused with both processes named (runtime/core_claim.h).
//  * Device memory is host memory, 64-byte aligned and charged to the core's HBM bank, so a
//    device tensor can be viewed as a CPU tensor over the same bytes without copying.
#pragma once

#include <string>

#include <c10/core/Device.h>

#include "vtrn/runtime/device_config.h"
#include "vtrn/runtime/device_memory.h"

namespace vtrn::torch_adapter {

/// The configuration read from the environment at first use. Throws its error if invalid.
const runtime::DeviceConfig& device_config();

/// VTRN_EXECUTION=shapes: tensors have accounted device memory that nothing writes, kernels
/// advance the modeled clock without running, and host reads see placeholders (zeros).
bool shapes_only();

/// Host reads (.item(), .cpu(), printing) so far; counted in every mode, reported by
/// shape-only runs since a script whose control flow depends on data may take another path.
int64_t host_reads();
void count_host_read();

/// Empty when the environment is valid, else the error that disables the device.
const std::string& device_config_error();

/// Logical NeuronCores this process sees (0 if the environment is invalid). An int: at LNC1
/// a trn2.48xlarge has 128, one more than c10::DeviceIndex (int8) can count.
int device_count() noexcept;

/// device_count() for PyTorch's interfaces, capped at 127. Indices 0-127 are all valid
/// DeviceIndex values; only the count 128 does not fit.
c10::DeviceIndex torch_device_count() noexcept;

/// The calling thread's current device index: its own if it chose one, else the process's.
c10::DeviceIndex current_device() noexcept;

/// Makes |index| the calling thread's device (torch.neuron.set_device). Throws a c10::Error
/// (RuntimeError, as CUDA) naming the valid range when |index| is out of it.
void set_device(c10::DeviceIndex index);

/// A DeviceGuard's temporary switch to |index| (checked), which does not pin the thread.
void switch_device(c10::DeviceIndex index);

/// A DeviceGuard's restore, for its noexcept uncheckedSetDevice: |index| must be one a checked
/// call accepted before.
void set_current_device_unchecked(c10::DeviceIndex index) noexcept;

/// Chooses the process's device once: the calling thread's own if it chose one, else |index|.
/// Later calls keep the first choice. Returns the process's device. Throws like set_device().
c10::DeviceIndex adopt_process_device(c10::DeviceIndex index);

/// True once adopt_process_device() chose the process's device.
bool process_device_chosen() noexcept;

/// Claims the node core of |index| for this process (a launcher's worker) on its first use;
/// throws a RuntimeError naming both processes when another worker of the node holds it.
void claim_device(c10::DeviceIndex index);

/// Throws a c10::Error (RuntimeError) naming the valid range unless 0 <= |index| < device_count().
void check_device_index(c10::DeviceIndex index);

/// The device memory of every visible core.
runtime::DeviceMemory& device_memory();

}  // namespace vtrn::torch_adapter
