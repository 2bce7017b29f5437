// The `neuron` device allocator, registered for PrivateUse1: device memory from the registry,
// charged to the current device's HBM bank, with torch.neuron.memory_stats() style statistics.
// Running out of a bank raises torch.OutOfMemoryError with the bank's state.
#include <cstring>
#include <utility>

#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>

#include "vtrn/torch/device.h"

namespace vtrn::torch_adapter {

namespace {

void free_device_block(void* ptr) { device_memory().free(ptr); }

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
    void* ptr = device_memory().allocate(device, nbytes, &oom);
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
    // Cached blocks may still be named by queued work only through live tensors, which keep
    // them allocated; releasing the cache is always safe.
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
