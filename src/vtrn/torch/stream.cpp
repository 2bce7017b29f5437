// The streams of each neuron device: the default stream and CUDA's round-robin pools, one per
// priority, each stream a runtime queue with its own worker; the calling thread's current
// stream per device.
#include "vtrn/torch/stream.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/graph_task.h>

#include "vtrn/cost/kernel_cost.h"
#include "vtrn/hw/runtime.h"
#include "vtrn/runtime/executor.h"
#include "vtrn/torch/device.h"
#include "vtrn/torch/eager/pending_group.h"
#include "vtrn/torch/gil.h"
#include "vtrn/torch/profiler.h"

namespace vtrn::torch_adapter {

namespace {

bool launch_blocking() {
  static const bool value = [] {
    const char* v = std::getenv("NEURON_LAUNCH_BLOCKING");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return value;
}

// Stream id 0 is each device's default stream; 1 + level * kStreamsPerPool + index is stream
// |index| of the pool of priority -level. The pools are CUDA's: 32 streams per priority, and
// PyTorch's CUDA streams offer the priorities 0 to -3 ("max_compile_time_stream_priorities").
constexpr int kStreamsPerPool = 32;
constexpr int kPriorityLevels = 4;
constexpr c10::StreamId kStreamCount = 1 + kPriorityLevels * kStreamsPerPool;

int priority_level(int priority) { return std::clamp(-priority, 0, kPriorityLevels - 1); }

[[noreturn]] void no_such_stream(c10::DeviceIndex device, c10::StreamId id) {
  TORCH_CHECK(false, "neuron:", static_cast<int>(device), " has no stream ", id,
              ": stream ids are 0 (the default stream) to ", kStreamCount - 1,
              " (the pool streams). Get streams from torch.neuron.Stream() or "
              "torch.neuron.current_stream() rather than building them from an id.");
}

// The highest device index with a created stream: a free looks for queued work on the devices
// up to it only, not on every device of the node (a trn2.48xlarge has 64).
std::atomic<int> highest_device_with_streams{-1};

class DeviceStreams {
 public:
  explicit DeviceStreams(c10::DeviceIndex device) : device_(device) {}

  runtime::Stream& get(c10::StreamId id) {
    if (id < 0 || id >= kStreamCount) no_such_stream(device_, id);
    // Every enqueue looks its stream up: once created, a stream is read without the lock.
    runtime::Stream* stream = slots_[id].load(std::memory_order_acquire);
    if (stream != nullptr) return *stream;
    std::lock_guard<std::mutex> lock(mutex_);
    stream = slots_[id].load(std::memory_order_relaxed);
    if (stream == nullptr) {
      // Leaked: a stream's worker runs until exit, and queued work may name the stream.
      stream = new runtime::Stream("neuron:" + std::to_string(device_) + " stream " +
                                   std::to_string(id));
      slots_[id].store(stream, std::memory_order_release);
      const int n = created_count_.load(std::memory_order_relaxed);
      created_[n].store(stream, std::memory_order_relaxed);
      created_count_.store(n + 1, std::memory_order_release);
      int highest = highest_device_with_streams.load(std::memory_order_relaxed);
      while (highest < device_ && !highest_device_with_streams.compare_exchange_weak(
                                      highest, device_, std::memory_order_release)) {
      }
    }
    return *stream;
  }

  c10::StreamId next_pool_id(int priority) {
    const int level = priority_level(priority);
    const uint32_t index = next_[level].fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool;
    return 1 + level * kStreamsPerPool + static_cast<c10::StreamId>(index);
  }

  /// Calls |f| on every stream created so far, without the lock (a free calls it).
  template <typename F>
  void for_each_created(F&& f) const {
    const int n = created_count_.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) f(created_[i].load(std::memory_order_relaxed));
  }

  /// Every stream created so far.
  std::vector<runtime::Stream*> all() const {
    std::vector<runtime::Stream*> out;
    for (const auto& slot : slots_) {
      if (runtime::Stream* stream = slot.load(std::memory_order_acquire)) out.push_back(stream);
    }
    return out;
  }

 private:
  c10::DeviceIndex device_;
  std::mutex mutex_;  // serialises creation
  std::array<std::atomic<runtime::Stream*>, kStreamCount> slots_{};
  std::array<std::atomic<uint32_t>, kPriorityLevels> next_{};
  std::array<std::atomic<runtime::Stream*>, kStreamCount> created_{};  // in creation order
  std::atomic<int> created_count_{0};
};

std::vector<std::unique_ptr<DeviceStreams>>& every_device_streams() {
  static std::vector<std::unique_ptr<DeviceStreams>>* all = [] {
    register_fork_handlers();
    auto* v = new std::vector<std::unique_ptr<DeviceStreams>>();  // leaked: workers run until exit
    for (int d = 0; d < device_count(); ++d) {
      v->push_back(std::make_unique<DeviceStreams>(static_cast<c10::DeviceIndex>(d)));
    }
    return v;
  }();
  return *all;
}

DeviceStreams& streams_of(c10::DeviceIndex device) {
  check_device_index(device);
  return *every_device_streams()[device];
}

/// Calls |f| on every stream created so far, on any device.
template <typename F>
void for_each_created_stream(F&& f) {
  const int highest = highest_device_with_streams.load(std::memory_order_acquire);
  if (highest < 0) return;
  const auto& all = every_device_streams();
  for (int d = 0; d <= highest; ++d) all[d]->for_each_created(f);
}

// fork(): groups first (a thread ending one enqueues on a stream), then the streams' workers.
// The wait for a running task releases the GIL: finishing it may drop the last C++ reference
// to a storage Python holds.
void hold_everything_for_fork() {
  lock_pending_groups_for_fork();
  {
    const WithoutGil no_gil;
    for (int d = 0; d < device_count(); ++d) {
      for (runtime::Stream* stream : streams_of(static_cast<c10::DeviceIndex>(d)).all())
        stream->hold_for_fork();
    }
    // Then each clock's lock: a host thread may hold one while it issues work.
    for (int d = 0; d < device_count(); ++d)
      device_clock(static_cast<c10::DeviceIndex>(d)).hold_for_fork();
  }
  // Last, with the GIL back, the allocator's: a worker ending its task or a thread issuing
  // work may free a block, and no holder of the allocator's lock waits for anything.
  device_memory().hold_for_fork();
}

void release_clocks_after_fork() {
  for (int d = 0; d < device_count(); ++d)
    device_clock(static_cast<c10::DeviceIndex>(d)).release_after_fork();
}

void release_everything_in_parent() {
  device_memory().release_after_fork();
  release_clocks_after_fork();
  for (int d = 0; d < device_count(); ++d) {
    for (runtime::Stream* stream : streams_of(static_cast<c10::DeviceIndex>(d)).all())
      stream->release_after_fork();
  }
  unlock_pending_groups_in_parent();
}

void renew_everything_in_child() {
  device_memory().release_after_fork();
  release_clocks_after_fork();
  renew_pending_group_locks_in_child();
}

thread_local std::vector<c10::StreamId> tls_current_streams;

c10::StreamId& current_stream_id(c10::DeviceIndex device) {
  if (tls_current_streams.size() <= static_cast<size_t>(device))
    tls_current_streams.resize(device + 1, 0);
  return tls_current_streams[device];
}

// One thread budget with ATen: the executor follows torch.set_num_threads (and, through
// torch's default, OMP_NUM_THREADS) as the thread queueing the op sees it, but not while that
// thread runs an autograd graph: the engine runs a neuron backward on its own device thread,
// whose OpenMP count is the one it started with, while the CPU's backward runs on the calling
// thread, with its count. During a backward the budget stays what the forward's thread set.
void follow_torch_threads() {
  if (torch::autograd::get_current_graph_task_id() == -1)
    runtime::set_executor_threads(at::get_num_threads());
}

[[noreturn]] void raise_queued_error(const runtime::QueuedOpError& e) {
  TORCH_CHECK(false, e.what(),
              " (the error surfaced at this synchronization point; set "
              "NEURON_LAUNCH_BLOCKING=1 to raise it at the op that queued the work)");
}

}  // namespace

void register_fork_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(&hold_everything_for_fork, &release_everything_in_parent,
                   &renew_everything_in_child);
  });
}

c10::Stream current_stream(c10::DeviceIndex device) {
  check_device_index(device);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::kPrivateUse1, device),
                     current_stream_id(device));
}

runtime::Stream& runtime_stream(const c10::Stream& stream) {
  // Anything that touches a stream must come after the ops AEE is still holding.
  flush_pending(stream.device_index());
  return streams_of(stream.device_index()).get(stream.id());
}

runtime::DeviceClock& device_clock(c10::DeviceIndex device) {
  static std::vector<std::unique_ptr<runtime::DeviceClock>>* all = [] {
    auto* v = new std::vector<std::unique_ptr<runtime::DeviceClock>>();  // leaked, as the streams
    for (int d = 0; d < device_count(); ++d)
      v->push_back(std::make_unique<runtime::DeviceClock>(hw::kExecutionLaunchOverhead));
    return v;
  }();
  check_device_index(device);
  return *(*all)[device];
}

runtime::ClockRecord advance_clock(c10::DeviceIndex device, std::string_view op,
                                   const runtime::ModeledWork& modeled) {
  const int stream = static_cast<int>(current_stream(device).id());
  return device_clock(device).advance(stream, op, modeled, profiler_correlation());
}

void enqueue(c10::DeviceIndex device, const char* op, const runtime::ModeledWork& modeled,
             std::function<void()> work) {
  // Flushes held AEE groups first, so the clock sees work in the order the streams run it.
  runtime_stream(current_stream(device));
  advance_clock(device, op, modeled);
  if (shapes_only()) return;  // the clock moved; the bytes are not computed
  enqueue(device, op, std::move(work));
}

runtime::Stream* begin_kernel(c10::DeviceIndex device, const char* op,
                              const runtime::ModeledWork& modeled) {
  runtime::Stream& stream = runtime_stream(current_stream(device));  // flushes AEE's groups
  advance_clock(device, op, modeled);
  if (shapes_only()) return nullptr;  // the clock moved; the bytes are not computed
  follow_torch_threads();
  return &stream;
}

void end_kernel(runtime::Stream& stream) {
  if (!launch_blocking()) return;
  const WithoutGil no_gil;
  try {
    stream.synchronize();
  } catch (const runtime::QueuedOpError& e) {
    TORCH_CHECK(false, e.what());
  }
}

KernelPlacement kernel_placement(const HostCost& cost) {
  // Small: a few microseconds on one core, about what handing it to the worker costs (a
  // futex wake, the worker's wake-up and sleep, a cache line or two moving between cores).
  constexpr double kSmallBytes = 64 * 1024;
  constexpr double kSmallFlops = 256 * 1024;
  if (cost.bytes <= kSmallBytes && cost.flops <= kSmallFlops) return KernelPlacement::kHere;
  // A budget of one thread: the worker would only compete with this thread for its core.
  if (runtime::executor_threads() == 1) return KernelPlacement::kHereWithoutGil;
  return KernelPlacement::kQueue;
}

namespace {
runtime::ModeledWork modeled_dma(double bytes, runtime::WorkKind kind) {
  cost::Work w;
  w.bytes = bytes;
  const cost::KernelCost c = cost::CostModel::trn2().estimate(w);
  return runtime::ModeledWork::on(kind, runtime::EngineClass::kDma, c.time_s);
}
}  // namespace

runtime::ModeledWork modeled_memory_kernel(double bytes) {
  return modeled_dma(bytes, runtime::WorkKind::kKernel);
}

runtime::ModeledWork modeled_device_copy(double bytes) {
  return modeled_dma(bytes, runtime::WorkKind::kCopy);
}

runtime::ModeledWork modeled_host_copy(double bytes) {
  return runtime::ModeledWork::on(
      runtime::WorkKind::kCopy, runtime::EngineClass::kDma,
      cost::CostModel::trn2().chip().dma_latency + bytes / hw::kHostTransferBps);
}

void host_wait_all(c10::DeviceIndex device) { device_clock(device).host_wait_all(); }

void host_wait_stream(const c10::Stream& stream) {
  runtime::DeviceClock& clock = device_clock(stream.device_index());
  clock.host_wait(clock.now(static_cast<int>(stream.id())));
}

void enqueue(c10::DeviceIndex device, const char* op, std::function<void()> work) {
  follow_torch_threads();
  runtime::Stream& stream = runtime_stream(current_stream(device));
  stream.enqueue(op, std::move(work));
  if (launch_blocking()) {
    const WithoutGil no_gil;
    try {
      stream.synchronize();
    } catch (const runtime::QueuedOpError& e) {
      TORCH_CHECK(false, e.what());
    }
  }
}

void sync_current_stream(c10::DeviceIndex device) {
  const WithoutGil no_gil;  // released before the flush too: it may wait for another flush
  try {
    runtime_stream(current_stream(device)).synchronize();
  } catch (const runtime::QueuedOpError& e) {
    raise_queued_error(e);
  }
}

void synchronize(c10::DeviceIndex index) {
  const WithoutGil no_gil;
  flush_pending(index);
  std::string first_error;
  for (runtime::Stream* stream : streams_of(index).all()) {
    try {
      stream->synchronize();
    } catch (const runtime::QueuedOpError& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (!first_error.empty()) raise_queued_error(runtime::QueuedOpError(first_error));
}

const runtime::Stream* allocation_stream(c10::DeviceIndex device) {
  // A worker's own allocation is used at once, after its stream's earlier work.
  if (const runtime::Stream* worker = runtime::Stream::running_on()) return worker;
  return &streams_of(device).get(current_stream_id(device));
}

void pending_fences(std::vector<runtime::StreamFence>* fences) {
  for_each_created_stream([&](runtime::Stream* s) {
    const uint64_t enqueued = s->enqueued();
    if (s->completed() < enqueued) fences->push_back(runtime::StreamFence{s, enqueued});
  });
}

void wait_for_queued_work() {
  const WithoutGil no_gil;
  for_each_created_stream([](runtime::Stream* s) {
    if (s != runtime::Stream::running_on()) s->wait_until_done(s->enqueued());
  });
}

c10::StreamId pool_stream_id(c10::DeviceIndex device, int priority) {
  return streams_of(device).next_pool_id(priority);
}

int stream_priority(c10::StreamId id) {
  if (id < 0 || id >= kStreamCount) no_such_stream(current_device(), id);
  return id == 0 ? 0 : -static_cast<int>((id - 1) / kStreamsPerPool);
}

std::pair<int, int> stream_priority_range() { return {0, -(kPriorityLevels - 1)}; }

c10::Stream exchange_stream(const c10::Stream& stream) {
  const c10::Stream old = current_stream(stream.device_index());
  runtime_stream(stream);  // validates the id
  current_stream_id(stream.device_index()) = stream.id();
  return old;
}

void synchronize_stream(const c10::Stream& stream) {
  const WithoutGil no_gil;
  try {
    runtime_stream(stream).synchronize();
  } catch (const runtime::QueuedOpError& e) {
    raise_queued_error(e);
  }
}

}  // namespace vtrn::torch_adapter
