// Pinned host memory for `neuron` (the allocator behind pin_memory=True).
#include "vtrn/torch/host_allocator.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

#include <c10/core/impl/alloc_cpu.h>

namespace vtrn::torch_adapter {

namespace {

// Pinned host memory: page-locked on real hardware; here ordinary host memory that is
// remembered, so is_pinned() and non-blocking copies can tell it apart.
class PinnedAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return {nullptr, nullptr, &free_pinned, c10::Device(c10::kCPU)};
    void* ptr = c10::alloc_cpu(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex());
      blocks().emplace(ptr, nbytes);
    }
    return {ptr, ptr, &free_pinned, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

  static bool contains(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex());
    const auto* p = static_cast<const char*>(ptr);
    for (const auto& [base, size] : blocks()) {
      const auto* b = static_cast<const char*>(base);
      if (p >= b && p < b + size) return true;
    }
    return false;
  }

 private:
  static std::mutex& mutex() {
    static auto* m = new std::mutex();
    return *m;
  }
  static std::unordered_map<void*, size_t>& blocks() {
    static auto* b = new std::unordered_map<void*, size_t>();
    return *b;
  }
  static void free_pinned(void* ptr) {
    if (ptr == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex());
      blocks().erase(ptr);
    }
    c10::free_cpu(ptr);
  }
};

PinnedAllocator& pinned_allocator_impl() {
  static auto* allocator = new PinnedAllocator();
  return *allocator;
}

}  // namespace

c10::Allocator& pinned_allocator() { return pinned_allocator_impl(); }

bool is_pinned(const void* ptr) { return PinnedAllocator::contains(ptr); }

}  // namespace vtrn::torch_adapter
