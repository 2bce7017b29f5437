// The streams of the `neuron` device and the queues kernels enqueue work on.
//
// Promises:
//  * Each device has a default stream (id 0) and, as CUDA does, a pool of 32 streams for each of
//    the priorities 0 (lowest), -1, -2 and -3 (highest). A new stream (torch.neuron.Stream(),
//    getNewStream, getStreamFromGlobalPool) is the next pool stream of its priority,
//    round-robin: the 33rd new stream of a priority is the first again. So a process never has
//    more than 129 streams, and stream workers, per device, however many streams it asks for.
//    A priority above 0 counts as 0 and one below -3 as -3 (CUDA clamps the same way). Each
//    stream is created on first use and lives until exit.
//  * Each device's current stream is per thread, as on CUDA (the default stream until set).
//  * Work enqueued on a stream runs in order on that stream's worker; host reads wait for it.
//    Anything that touches a stream first runs the ops Adaptive Eager Execution still holds.
//  * A kernel (run_kernel) runs at once on the issuing thread instead when its stream is idle
//    and it is small on the host, or when the thread budget (torch.set_num_threads,
//    OMP_NUM_THREADS) is one thread: handing a few microseconds of work to the worker and
//    waking it costs more than the work, and a budget of one thread leaves no core for a
//    worker. To every other thread, stream and event it is queued work that already ran. So a
//    program whose kernels all run inline never starts a stream worker.
//  * An error of queued work is raised (c10::Error) at the next synchronization point, or at
//    once under NEURON_LAUNCH_BLOCKING=1.
//  * Every wait releases the GIL while it blocks (see gil.h).
//  * fork() (a DataLoader worker, a subprocess) first waits, without the GIL, until no thread
//    is ending a fused group and every stream's worker is between tasks, and holds them there
//    until the fork is done. So a child finds the groups whole and unlocked, no lock held by a
//    worker it does not have, and every op its parent issued either run or still queued (the
//    child runs those). The wait is for the task each worker is running, not the queue. Each
//    device's modeled clock lock and then the device allocator's lock are held across the
//    fork too (a thread that frees or allocates a block meanwhile waits).
//  * Each device has a modeled clock (runtime::DeviceClock): work queued with a ModeledWork
//    advances its stream's timeline there, tagged with the profiler's current op. The host
//    waits on that clock only where the user synchronizes (device_host_wait_all and friends);
//    the waits vtrn makes internally (a collective waiting for its producers, FSDP2's storage
//    resize) are emulation details and leave the modeled clock alone.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include "vtrn/runtime/device_clock.h"
#include "vtrn/runtime/device_memory.h"
#include "vtrn/runtime/stream.h"
#include "vtrn/torch/gil.h"

namespace vtrn::torch_adapter {

/// A neuron event: the runtime event and the device it was last recorded on (-1: never).
struct NeuronEvent : runtime::Event {
  c10::DeviceIndex device = -1;
};

/// The modeled clock of |device|.
runtime::DeviceClock& device_clock(c10::DeviceIndex device);

/// Queues |work| like enqueue() below and places |modeled| on the current stream's modeled
/// timeline.
void enqueue(c10::DeviceIndex device, const char* op, const runtime::ModeledWork& modeled,
             std::function<void()> work);

/// What a kernel costs the host: the bytes it reads and writes, its FLOPs.
struct HostCost {
  double bytes = 0;
  double flops = 0;
};

/// How run_kernel() runs a kernel of |cost|.
enum class KernelPlacement {
  kQueue,          ///< on the stream's worker
  kHere,           ///< on the calling thread when the stream is idle, keeping the GIL
  kHereWithoutGil  ///< the same, releasing the GIL while it runs (a long kernel)
};
KernelPlacement kernel_placement(const HostCost& cost);

/// Before a kernel: runs the ops AEE holds, advances the modeled clock and the thread budget.
/// The current stream of |device|, or nullptr in shape-only execution (nothing to run).
runtime::Stream* begin_kernel(c10::DeviceIndex device, const char* op,
                              const runtime::ModeledWork& modeled);
/// After it: under NEURON_LAUNCH_BLOCKING=1, waits for |stream| and raises its error.
void end_kernel(runtime::Stream& stream);

/// Runs the kernel |work| on the current stream of |device| with |modeled| on its timeline:
/// at once on the calling thread when kernel_placement() and the stream allow (see the
/// promises above), else queued as enqueue() does. |work| must not wait for anything: a gate
/// or a sleep goes through enqueue(). |op| must be a string literal.
template <typename F>
void run_kernel(c10::DeviceIndex device, const char* op, const runtime::ModeledWork& modeled,
                const HostCost& cost, F work) {
  runtime::Stream* stream = begin_kernel(device, op, modeled);
  if (stream == nullptr) return;
  bool ran = false;
  switch (kernel_placement(cost)) {
    case KernelPlacement::kQueue:
      break;
    case KernelPlacement::kHere:
      ran = stream->run_inline_if_idle(op, work) != 0;
      break;
    case KernelPlacement::kHereWithoutGil: {
      const WithoutGil no_gil;
      ran = stream->run_inline_if_idle(op, work) != 0;
      break;
    }
  }
  if (!ran) stream->enqueue(op, std::function<void()>(std::move(work)));
  end_kernel(*stream);
}

/// Places |modeled| on the current stream's timeline of |device| without queueing anything
/// (a collective, whose data moved on the host; a copy made at once).
runtime::ClockRecord advance_clock(c10::DeviceIndex device, std::string_view op,
                                   const runtime::ModeledWork& modeled);

/// A kernel that only moves |bytes| between HBM and the core (fill, zero), from the cost model.
runtime::ModeledWork modeled_memory_kernel(double bytes);
/// A copy of |bytes| inside the device (a DMA), from the cost model.
runtime::ModeledWork modeled_device_copy(double bytes);
/// A copy of |bytes| between host memory and the device: one DMA start plus the bytes at the
/// host transfer bandwidth (hw::kHostTransferBps).
runtime::ModeledWork modeled_host_copy(double bytes);

/// The user synchronizes on the host: with every stream of |device|, with |stream|.
void host_wait_all(c10::DeviceIndex device);
void host_wait_stream(const c10::Stream& stream);

/// The calling thread's current stream on |device|.
c10::Stream current_stream(c10::DeviceIndex device);

/// The runtime queue behind |stream|. Throws when |stream| names no stream of its device.
runtime::Stream& runtime_stream(const c10::Stream& stream);

/// Queues |work| on the current stream of |device|. Under NEURON_LAUNCH_BLOCKING=1 it waits
/// for the work and raises its error at once. |op| must be a string literal.
void enqueue(c10::DeviceIndex device, const char* op, std::function<void()> work);

/// Waits for the current stream of |device|; raises (c10::Error) the first error of its work.
void sync_current_stream(c10::DeviceIndex device);

/// Waits for |stream|; raises (c10::Error) the first error of its work.
void synchronize_stream(const c10::Stream& stream);

/// The stream an allocation made now is for: the calling thread's current stream of |device|,
/// or, on a stream's worker, that stream. Does not flush held AEE groups.
const runtime::Stream* allocation_stream(c10::DeviceIndex device);

/// Appends a fence for each stream (of any device) with queued work not yet run: what a block
/// freed now must wait for before another stream or the host reuses it.
void pending_fences(std::vector<runtime::StreamFence>* fences);

/// Waits, without raising their errors, for the work queued so far on every stream (but the
/// calling worker's own): afterwards every fence taken before is reached.
void wait_for_queued_work();

/// Installs the fork handlers described above; called before any group or stream exists.
void register_fork_handlers();

/// Waits for every stream of |device|; raises the first error of their work.
void synchronize(c10::DeviceIndex index);

/// The id of the next pool stream of |device| with |priority| (round-robin over its pool).
c10::StreamId pool_stream_id(c10::DeviceIndex device, int priority);

/// The priority of the stream |id|: 0 for the default stream, else its pool's priority.
/// Throws when |id| names no stream.
int stream_priority(c10::StreamId id);

/// The priorities streams can have, as (lowest, highest): (0, -3), as PyTorch's CUDA streams.
std::pair<int, int> stream_priority_range();

/// Makes |stream| the calling thread's current stream on its device; returns the previous one.
/// Throws when |stream| names no stream of its device.
c10::Stream exchange_stream(const c10::Stream& stream);

}  // namespace vtrn::torch_adapter
