// The `neuron` device allocator, registered for PrivateUse1: device memory from the registry,
// charged to the current device's HBM bank, with torch.neuron.memory_stats() style statistics.
// Running out of a bank raises torch.OutOfMemoryError with the bank's state.
//
// Reuse is stream ordered, as with CUDA's caching allocator: queued work names its buffers by
// address and does not keep their storages alive, so a tensor's block returns to the cache when
// its last tensor dies, fenced by the streams' queued work. The next allocation on the same
// stream takes it at once (whatever it does with the block is queued after that work); another
// stream or the host waits for the fences. record_stream has nothing to add.
#include <cstring>
#include <utility>
#include <vector>

#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>

#include "vtrn/torch/device.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {

namespace {

void free_device_block(void* ptr) {
  if (ptr == nullptr) return;
  std::vector<runtime::StreamFence> fences;
  pending_fences(&fences);
  device_memory().free(ptr, std::move(fences));
}

void fill_stat_array(c10::CachingAllocator::StatArray& array, const runtime::MemoryStat& stat) {
  // vtrn has one pool; it is reported as the aggregate and as the large pool.
  for (auto type :
       {c10::CachingAllocator::StatType::AGGREGATE, c10::CachingAllocator::StatType::LARGE_POOL}) {
    auto& s = array[static_cast<size_t>(type)];
    s.current = stat.current;
    s.peak = stat.peak;
    s.allocated = stat.allocated;
    s.freed = stat.freed;
  }
}

class NeuronAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::DeviceIndex device = current_device();
    const c10::Device tagged(c10::kPrivateUse1, device);
    claim_device(device);  // the core becomes this process's (one process per core)
    if (nbytes == 0) return {nullptr, nullptr, &free_device_block, tagged};
    runtime::OutOfMemory oom;
    const runtime::Stream* stream = allocation_stream(device);
    void* ptr = device_memory().allocate(device, nbytes, &oom, stream);
    while (ptr == nullptr && oom.pending) {
      // Cached blocks that queued work may still use: once it has run they can be released.
      wait_for_queued_work();
      ptr = device_memory().allocate(device, nbytes, &oom, stream);
    }
    TORCH_CHECK_WITH(OutOfMemoryError, ptr != nullptr, "neuron out of memory. ",
                     oom.message(device_config()));
    return {ptr, ptr, &free_device_block, tagged};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_device_block; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

  bool initialized() override { return device_config_error().empty(); }

  void emptyCache(c10::MempoolId_t) override {
    // Cached blocks queued work may still use are released once it has run (as CUDA
    // synchronizes before releasing its cache).
    wait_for_queued_work();
    device_memory().empty_cache(-1);
  }

  void recordStream(const c10::DataPtr&, c10::Stream) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    check_device_index(device);
    const runtime::MemoryStats s = device_memory().stats(device);
    c10::CachingDeviceAllocator::DeviceStats out;
    fill_stat_array(out.allocated_bytes, s.allocated_bytes);
    fill_stat_array(out.active_bytes, s.allocated_bytes);
    fill_stat_array(out.requested_bytes, s.requested_bytes);
    fill_stat_array(out.reserved_bytes, s.reserved_bytes);
    fill_stat_array(out.allocation, s.allocations);
    fill_stat_array(out.active, s.allocations);
    fill_stat_array(out.segment, s.segments);
    out.num_ooms = s.num_ooms;
    out.num_alloc_retries = s.num_alloc_retries;
    return out;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    check_device_index(device);
    device_memory().reset_accumulated(device);
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    check_device_index(device);
    device_memory().reset_peak(device);
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device_index(device);
    return {device_memory().bank_free(device), device_memory().capacity(device)};
  }
};

NeuronAllocator& neuron_allocator() {
  static auto* allocator = new NeuronAllocator();  // leaked: tensors may die at exit
  return *allocator;
}

struct RegisterAllocator {
  RegisterAllocator() { c10::SetAllocator(c10::kPrivateUse1, &neuron_allocator()); }
} register_allocator;

}  // namespace

}  // namespace vtrn::torch_adapter
