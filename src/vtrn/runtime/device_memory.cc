#include "vtrn/runtime/device_memory.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include <sys/mman.h>

#include "vtrn/runtime/stream.h"

namespace vtrn::runtime {

namespace {
constexpr std::size_t kAlignment = 64;

bool all_reached(const std::vector<StreamFence>& fences, const Stream* except) {
  for (const StreamFence& f : fences) {
    if (f.stream != except && !f.reached()) return false;
  }
  return true;
}
}  // namespace

bool StreamFence::reached() const { return stream == nullptr || stream->completed() >= sequence; }

std::string format_bytes(uint64_t bytes) {
  // CUDA's caching allocator's thresholds: a unit is used up to and including 1024 of the next
  // smaller one ("1024 bytes", "1024.00 KiB"), and GiB has no upper bound.
  constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (bytes <= kKiB) return std::to_string(bytes) + " bytes";
  const auto [unit, name] = bytes <= kMiB   ? std::pair{kKiB, "KiB"}
                            : bytes <= kGiB ? std::pair{kMiB, "MiB"}
                                            : std::pair{kGiB, "GiB"};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f %s", static_cast<double>(bytes) / static_cast<double>(unit),
                name);
  return buf;
}

std::string OutOfMemory::message(const DeviceConfig& config) const {
  std::ostringstream msg;
  msg << "Tried to allocate " << format_bytes(requested) << ". neuron:" << device
      << " (logical core " << config.visible_cores.at(device) << " of " << config.describe()
      << ") has a total capacity of " << format_bytes(capacity) << " of which "
      << format_bytes(free) << " is free. Of the allocated memory " << format_bytes(allocated)
      << " is allocated by PyTorch, and " << format_bytes(reserved - allocated)
      << " is reserved by PyTorch but unallocated.";
  for (const auto& [neighbour, held] : neighbours) {
    msg << " neuron:" << neighbour << " shares this HBM bank and holds " << format_bytes(held)
        << ".";
  }
  msg << " Reduce the batch size or shard the model further (FSDP/TP)";
  if (!neighbours.empty()) msg << ", or run at LNC2 so that no other core shares the bank";
  msg << ".";
  return msg.str();
}

DeviceMemory::DeviceMemory(DeviceConfig config) : config_(std::move(config)) {
  devices_.resize(config_.device_count());
  int banks = 0;
  for (int d = 0; d < config_.device_count(); ++d) banks = std::max(banks, config_.bank_of(d) + 1);
  bank_reserved_.assign(banks, 0);
}

DeviceMemory::~DeviceMemory() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [ptr, block] : cached_) free_host_block(ptr, block.size);
  // Live blocks belong to their holders; they are never freed behind their backs.
}

void* DeviceMemory::host_block(uint64_t size) const {
  if (!config_.shapes_only) return std::aligned_alloc(kAlignment, size);
  // Page aligned (so 64-byte aligned); pages are only backed once written, which nothing does.
  void* ptr = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return ptr == MAP_FAILED ? nullptr : ptr;
}

void DeviceMemory::free_host_block(void* ptr, uint64_t size) const {
  if (config_.shapes_only) {
    munmap(ptr, size);
  } else {
    std::free(ptr);
  }
}

uint64_t DeviceMemory::round_size(uint64_t nbytes) {
  return (nbytes + kRoundBytes - 1) / kRoundBytes * kRoundBytes;
}

void DeviceMemory::check_device(int device) const {
  if (device < 0 || device >= config_.device_count()) {
    throw std::out_of_range("neuron:" + std::to_string(device) +
                            " does not exist; this process sees " +
                            std::to_string(config_.device_count()) + " neuron devices");
  }
}

void* DeviceMemory::allocate(int device, uint64_t nbytes, OutOfMemory* oom, const Stream* stream) {
  check_device(device);
  if (nbytes == 0) return nullptr;
  const uint64_t size = round_size(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceState& state = devices_[device];
  MemoryStats& stats = state.stats;

  void* ptr = nullptr;
  if (auto it = state.cache.find(size); it != state.cache.end()) {
    std::vector<CachedBlock>& blocks = it->second;
    for (size_t i = blocks.size(); i-- > 0;) {  // the most recently freed first
      if (!all_reached(blocks[i].fences, stream)) continue;
      ptr = blocks[i].ptr;
      blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
      cached_.erase(ptr);
      break;
    }
  }
  if (ptr == nullptr) {
    const int bank = config_.bank_of(device);
    if (bank_reserved_[bank] + size > config_.bank_bytes) {
      // Free this bank's cached blocks (ours and the neighbour's) and try once more.
      ++stats.num_alloc_retries;
      for (int d = 0; d < config_.device_count(); ++d) {
        if (config_.bank_of(d) == bank) release_cached_locked(d);
      }
    }
    if (bank_reserved_[bank] + size > config_.bank_bytes) {
      if (pending_cached_locked(bank)) {
        // Not out of memory yet: queued work still holds cached blocks of this bank.
        if (oom != nullptr) oom->pending = true;
        return nullptr;
      }
      ++stats.num_ooms;
      if (oom != nullptr) {
        oom->pending = false;
        oom->device = device;
        oom->requested = size;
        oom->capacity = config_.bank_bytes;
        oom->free = config_.bank_bytes - bank_reserved_[bank];
        oom->allocated = static_cast<uint64_t>(stats.allocated_bytes.current);
        oom->reserved = static_cast<uint64_t>(stats.reserved_bytes.current);
        oom->neighbours.clear();
        for (int d = 0; d < config_.device_count(); ++d) {
          if (d != device && config_.bank_of(d) == bank) {
            oom->neighbours.emplace_back(
                d, static_cast<uint64_t>(devices_[d].stats.reserved_bytes.current));
          }
        }
      }
      return nullptr;
    }
    ptr = host_block(size);
    if (ptr == nullptr) throw std::bad_alloc();
    bank_reserved_[bank] += size;
    stats.reserved_bytes.add(static_cast<int64_t>(size));
    stats.segments.add(1);
  }
  live_.emplace(ptr, Block{size, nbytes, device});
  stats.allocated_bytes.add(static_cast<int64_t>(size));
  stats.requested_bytes.add(static_cast<int64_t>(nbytes));
  stats.allocations.add(1);
  return ptr;
}

void DeviceMemory::free(void* ptr, std::vector<StreamFence> fences) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end())
    throw std::logic_error("DeviceMemory::free: pointer was not allocated here");
  const Block block = it->second;
  live_.erase(it);
  MemoryStats& stats = devices_[block.device].stats;
  stats.allocated_bytes.remove(static_cast<int64_t>(block.size));
  stats.requested_bytes.remove(static_cast<int64_t>(block.requested));
  stats.allocations.remove(1);
  devices_[block.device].cache[block.size].push_back(CachedBlock{ptr, std::move(fences)});
  cached_.emplace(ptr, block);
}

int DeviceMemory::device_of_live(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(const_cast<void*>(ptr));
  return it == live_.end() ? -1 : it->second.device;
}

bool DeviceMemory::has_pending_cached(int device) const {
  check_device(device);
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_cached_locked(config_.bank_of(device));
}

bool DeviceMemory::pending_cached_locked(int bank) const {
  for (int d = 0; d < config_.device_count(); ++d) {
    if (config_.bank_of(d) != bank) continue;
    for (const auto& [size, blocks] : devices_[d].cache) {
      for (const CachedBlock& b : blocks) {
        if (!all_reached(b.fences, nullptr)) return true;
      }
    }
  }
  return false;
}

void DeviceMemory::release_cached_locked(int device) {
  DeviceState& state = devices_[device];
  const int bank = config_.bank_of(device);
  for (auto& [size, blocks] : state.cache) {
    std::vector<CachedBlock> pending;  // queued work may still use these: kept
    for (CachedBlock& b : blocks) {
      if (!all_reached(b.fences, nullptr)) {
        pending.push_back(std::move(b));
        continue;
      }
      cached_.erase(b.ptr);
      free_host_block(b.ptr, size);
      bank_reserved_[bank] -= size;
      state.stats.reserved_bytes.remove(static_cast<int64_t>(size));
      state.stats.segments.remove(1);
    }
    blocks = std::move(pending);
  }
}

void DeviceMemory::empty_cache(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (device < 0) {
    for (int d = 0; d < config_.device_count(); ++d) release_cached_locked(d);
    return;
  }
  check_device(device);
  release_cached_locked(device);
}

MemoryStats DeviceMemory::stats(int device) const {
  check_device(device);
  std::lock_guard<std::mutex> lock(mutex_);
  return devices_[device].stats;
}

void DeviceMemory::reset_peak(int device) {
  check_device(device);
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats& s = devices_[device].stats;
  for (MemoryStat* stat :
       {&s.allocated_bytes, &s.requested_bytes, &s.reserved_bytes, &s.allocations, &s.segments}) {
    stat->peak = stat->current;
  }
}

void DeviceMemory::reset_accumulated(int device) {
  check_device(device);
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats& s = devices_[device].stats;
  for (MemoryStat* stat :
       {&s.allocated_bytes, &s.requested_bytes, &s.reserved_bytes, &s.allocations, &s.segments}) {
    stat->allocated = 0;
    stat->freed = 0;
  }
  s.num_ooms = 0;
  s.num_alloc_retries = 0;
}

uint64_t DeviceMemory::capacity(int device) const {
  check_device(device);
  return config_.bank_bytes;
}

uint64_t DeviceMemory::bank_free(int device) const {
  check_device(device);
  std::lock_guard<std::mutex> lock(mutex_);
  return config_.bank_bytes - bank_reserved_[config_.bank_of(device)];
}

std::optional<int> DeviceMemory::device_of(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto* p = static_cast<const char*>(ptr);
  for (const auto* blocks : {&live_, &cached_}) {
    for (const auto& [base, block] : *blocks) {
      const auto* b = static_cast<const char*>(base);
      if (p >= b && p < b + block.size) return block.device;
    }
  }
  return std::nullopt;
}

}  // namespace vtrn::runtime
