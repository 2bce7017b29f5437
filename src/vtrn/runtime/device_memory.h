// Device memory of the logical cores this process sees: a caching allocator over host memory
// that enforces each HBM bank's capacity.
//
// Promises:
//  * The budget is checked before host memory is touched: a request that does not fit (after
//    releasing this bank's cached blocks) returns nullptr with an OutOfMemory report, and
//    leaves every count as it was.
//  * Cores that share a bank (two logical cores at LNC1 on trn2) share its capacity, so one
//    can run out because of its neighbour.
//  * Freed blocks are cached per device and size and reused; reserved >= allocated always.
//  * Reuse is stream ordered, as CUDA's caching allocator: a block is freed with fences, the
//    points of the streams' queues whose work may still read or write it. An allocation for
//    stream S reuses it once every fence of another stream is reached; S's own fence does not
//    matter, since whatever S does with the new block is queued after that work. An allocation
//    for no stream (the host) needs every fence reached. A cached block goes back to the host
//    only once all its fences are reached.
//  * Stats are exact after every call. All methods are thread safe and never call Python.
//  * In shape-only execution (DeviceConfig::shapes_only) every decision and count is the same,
//    but a block is a lazily mapped anonymous mapping (MAP_NORESERVE) that nothing writes: it
//    reads as zeros and costs no resident memory, so a model larger than the host "fits".
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "vtrn/runtime/device_config.h"

namespace vtrn::runtime {

class Stream;

/// A point in a stream's queue: reached once the stream has run its task numbered |sequence|.
struct StreamFence {
  const Stream* stream = nullptr;
  uint64_t sequence = 0;
  bool reached() const;
};

/// Current, peak and accumulated value of one counter (CUDA's allocator stat shape).
struct MemoryStat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;  ///< total ever added
  int64_t freed = 0;      ///< total ever removed

  void add(int64_t n) {
    current += n;
    allocated += n;
    if (current > peak) peak = current;
  }
  void remove(int64_t n) {
    current -= n;
    freed += n;
  }
};

struct MemoryStats {
  MemoryStat allocated_bytes;  ///< bytes in live tensors (rounded block sizes)
  MemoryStat requested_bytes;  ///< bytes the callers asked for
  MemoryStat reserved_bytes;   ///< allocated plus cached
  MemoryStat allocations;      ///< live blocks
  MemoryStat segments;         ///< host allocations held (live + cached)
  int64_t num_ooms = 0;
  int64_t num_alloc_retries = 0;  ///< requests that had to release the cache first
};

/// Why an allocation failed, with what a CUDA-style message needs.
struct OutOfMemory {
  int device = 0;
  uint64_t requested = 0;                            ///< bytes asked for (after rounding)
  uint64_t capacity = 0;                             ///< usable bytes of the device's bank
  uint64_t free = 0;                                 ///< bytes of the bank not reserved by anyone
  uint64_t allocated = 0;                            ///< bytes this device holds in live tensors
  uint64_t reserved = 0;                             ///< bytes this device holds, cached included
  std::vector<std::pair<int, uint64_t>> neighbours;  ///< (device, reserved) sharing the bank
  /// Not out of memory yet: cached blocks of the bank wait for queued work; once it has run,
  /// a retry can release them. The other fields are not filled then.
  bool pending = false;

  /// "Tried to allocate 2.00 GiB. neuron:3 ... what to do" (without the leading error kind).
  std::string message(const DeviceConfig& config) const;
};

class DeviceMemory {
 public:
  explicit DeviceMemory(DeviceConfig config);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  /// Allocation granularity: requests are rounded up to a multiple of this.
  static constexpr uint64_t kRoundBytes = 512;
  static uint64_t round_size(uint64_t nbytes);

  /// A 64-byte aligned block of at least |nbytes| on |device| for work queued on |stream|
  /// (nullptr: the host), or nullptr with |*oom| filled. |nbytes| == 0 returns nullptr
  /// without failing. Cached blocks whose fences still hold (see above) are skipped and, when
  /// the budget is short, kept: then it returns nullptr with |oom->pending| set, and the
  /// caller waits for the streams and retries.
  void* allocate(int device, uint64_t nbytes, OutOfMemory* oom, const Stream* stream = nullptr);

  /// Returns a block from allocate() to its device's cache; it is reused only as |fences|
  /// allow (none: at once, by anyone).
  void free(void* ptr, std::vector<StreamFence> fences = {});

  /// The device of the live block |ptr| (-1 when it is none).
  int device_of_live(const void* ptr) const;

  /// Whether a cached block of |device|'s bank still waits for a fence.
  bool has_pending_cached(int device) const;

  /// Releases |device|'s cached blocks (-1: every device).
  void empty_cache(int device);

  MemoryStats stats(int device) const;
  void reset_peak(int device);
  void reset_accumulated(int device);

  /// Usable bytes of |device|'s bank, and what is not reserved in it.
  uint64_t capacity(int device) const;
  uint64_t bank_free(int device) const;

  /// The device whose block contains |ptr|, if any.
  std::optional<int> device_of(const void* ptr) const;

  const DeviceConfig& config() const { return config_; }

  /// For fork(): takes the lock every method uses until release_after_fork() (in the parent,
  /// and in the child, where the forking thread still holds it), so that a child never finds
  /// it held by a thread it does not have.
  void hold_for_fork() { mutex_.lock(); }
  void release_after_fork() { mutex_.unlock(); }

 private:
  struct Block {
    uint64_t size;  ///< rounded
    uint64_t requested;
    int device;
  };
  struct CachedBlock {
    void* ptr;
    std::vector<StreamFence> fences;
  };
  struct DeviceState {
    MemoryStats stats;
    std::unordered_map<uint64_t, std::vector<CachedBlock>> cache;  ///< size -> free blocks
  };

  void release_cached_locked(int device);
  void* host_block(uint64_t size) const;
  void free_host_block(void* ptr, uint64_t size) const;
  bool pending_cached_locked(int bank) const;
  void check_device(int device) const;

  DeviceConfig config_;
  mutable std::mutex mutex_;
  std::vector<DeviceState> devices_;
  std::vector<uint64_t> bank_reserved_;  ///< by bank id
  std::unordered_map<void*, Block> live_;
  std::unordered_map<void*, Block> cached_;  ///< cached blocks, for device_of()
};

/// "1.50 GiB", "512.00 KiB", "1024 bytes": the units and thresholds of CUDA's out-of-memory
/// message.
std::string format_bytes(uint64_t bytes);

}  // namespace vtrn::runtime
