#include "vtrn/runtime/device_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <future>
#include <map>

#include <unistd.h>

#include "vtrn/runtime/stream.h"

namespace vtrn::runtime {
namespace {

DeviceConfig config_with(std::map<std::string, std::string> vars) {
  return device_config_from_env([vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

constexpr uint64_t kKiB = 1024;

TEST(DeviceMemoryTest, RoundsToFiveHundredTwelveBytes) {
  EXPECT_EQ(DeviceMemory::round_size(1), 512u);
  EXPECT_EQ(DeviceMemory::round_size(512), 512u);
  EXPECT_EQ(DeviceMemory::round_size(513), 1024u);
}

TEST(DeviceMemoryTest, StatsAreExactAndCacheIsReused) {
  DeviceMemory mem(config_with({{"VTRN_HBM_BYTES", "1048576"}}));
  void* a = mem.allocate(0, 1000, nullptr);  // rounds to 1024
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  MemoryStats s = mem.stats(0);
  EXPECT_EQ(s.allocated_bytes.current, 1024);
  EXPECT_EQ(s.requested_bytes.current, 1000);
  EXPECT_EQ(s.reserved_bytes.current, 1024);
  EXPECT_EQ(s.allocations.current, 1);
  mem.free(a);
  s = mem.stats(0);
  EXPECT_EQ(s.allocated_bytes.current, 0);
  EXPECT_EQ(s.allocated_bytes.peak, 1024);
  EXPECT_EQ(s.reserved_bytes.current, 1024);  // cached
  void* b = mem.allocate(0, 1024, nullptr);
  EXPECT_EQ(b, a);  // the cached block came back
  EXPECT_EQ(mem.stats(0).segments.current, 1);
  mem.free(b);
  mem.empty_cache(0);
  s = mem.stats(0);
  EXPECT_EQ(s.reserved_bytes.current, 0);
  EXPECT_EQ(s.segments.current, 0);
  mem.reset_peak(0);
  EXPECT_EQ(mem.stats(0).allocated_bytes.peak, 0);
  EXPECT_EQ(mem.stats(1).reserved_bytes.current, 0);  // other devices untouched
}

TEST(DeviceMemoryTest, OverBudgetFailsBeforeTouchingMemoryAndKeepsStats) {
  DeviceMemory mem(config_with({{"VTRN_HBM_BYTES", "4096"}}));
  void* a = mem.allocate(3, 3 * kKiB, nullptr);
  ASSERT_NE(a, nullptr);
  const MemoryStats before = mem.stats(3);
  OutOfMemory oom;
  EXPECT_EQ(mem.allocate(3, 2 * kKiB, &oom), nullptr);
  EXPECT_EQ(oom.device, 3);
  EXPECT_EQ(oom.requested, 2 * kKiB);
  EXPECT_EQ(oom.capacity, 4 * kKiB);
  EXPECT_EQ(oom.free, 1 * kKiB);
  EXPECT_EQ(oom.allocated, 3 * kKiB);
  const MemoryStats after = mem.stats(3);
  EXPECT_EQ(after.allocated_bytes.current, before.allocated_bytes.current);
  EXPECT_EQ(after.reserved_bytes.current, before.reserved_bytes.current);
  EXPECT_EQ(after.num_ooms, 1);
  const std::string msg = oom.message(mem.config());
  EXPECT_NE(
      msg.find(
          "Tried to allocate 2.00 KiB. neuron:3 (logical core 3 of trn2.48xlarge, LNC2) has a "
          "total "
          "capacity of 4.00 KiB of which 1024 bytes is free. Of the allocated memory 3.00 KiB is "
          "allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated."),
      std::string::npos)
      << msg;
  // Still usable: a request that fits succeeds.
  void* b = mem.allocate(3, 1 * kKiB, nullptr);
  EXPECT_NE(b, nullptr);
  mem.free(a);
  mem.free(b);
}

TEST(DeviceMemoryTest, OverBudgetReleasesTheCacheFirst) {
  DeviceMemory mem(config_with({{"VTRN_HBM_BYTES", "4096"}}));
  void* a = mem.allocate(0, 3 * kKiB, nullptr);
  mem.free(a);  // cached: 3 KiB reserved
  void* b = mem.allocate(0, 2 * kKiB, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(mem.stats(0).num_alloc_retries, 1);
  EXPECT_EQ(mem.stats(0).reserved_bytes.current, static_cast<int64_t>(2 * kKiB));
  mem.free(b);
}

TEST(DeviceMemoryTest, Lnc1NeighbourCanExhaustTheSharedBank) {
  DeviceMemory mem(config_with({{"NEURON_LOGICAL_NC_CONFIG", "1"}, {"VTRN_HBM_BYTES", "8192"}}));
  void* big = mem.allocate(4, 6 * kKiB, nullptr);  // core 4 and core 5 share bank 2
  ASSERT_NE(big, nullptr);
  OutOfMemory oom;
  EXPECT_EQ(mem.allocate(5, 4 * kKiB, &oom), nullptr);
  ASSERT_EQ(oom.neighbours.size(), 1u);
  EXPECT_EQ(oom.neighbours[0].first, 4);
  EXPECT_EQ(oom.neighbours[0].second, 6 * kKiB);
  EXPECT_EQ(oom.free, 2 * kKiB);
  EXPECT_NE(oom.message(mem.config()).find("neuron:4 shares this HBM bank and holds 6.00 KiB"),
            std::string::npos);
  // Core 6 is on another bank and unaffected.
  void* other = mem.allocate(6, 4 * kKiB, nullptr);
  EXPECT_NE(other, nullptr);
  mem.free(big);
  mem.free(other);
}

TEST(DeviceMemoryTest, DeviceOfFindsInteriorPointers) {
  DeviceMemory mem(config_with({}));
  auto* p = static_cast<char*>(mem.allocate(7, 4096, nullptr));
  EXPECT_EQ(mem.device_of(p + 100), 7);
  int stack_value = 0;
  EXPECT_EQ(mem.device_of(&stack_value), std::nullopt);
  mem.free(p);
}

// Resident bytes of this process, from /proc/self/statm.
uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

TEST(DeviceMemoryTest, ShapeOnlyBlocksCountTheSameAndCostNoResidentMemory) {
  // 40 GiB bank, two 16 GiB blocks: the same stats as a real run, the third does not fit.
  const uint64_t gib = 1ull << 30;
  DeviceMemory mem(
      config_with({{"VTRN_EXECUTION", "shapes"}, {"VTRN_HBM_BYTES", std::to_string(40 * gib)}}));
  const uint64_t before = resident_bytes();
  void* a = mem.allocate(0, 16 * gib, nullptr);
  void* b = mem.allocate(0, 16 * gib, nullptr);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(static_cast<const unsigned char*>(a)[gib], 0);  // reads as zeros
  EXPECT_LT(resident_bytes(), before + 64 * kKiB * kKiB);
  OutOfMemory oom;
  EXPECT_EQ(mem.allocate(0, 16 * gib, &oom), nullptr);
  EXPECT_EQ(oom.requested, 16 * gib);
  EXPECT_EQ(oom.free, 8 * gib);
  mem.free(a);
  EXPECT_EQ(mem.allocate(0, 16 * gib, nullptr), a);  // the cached block comes back
  const MemoryStats s = mem.stats(0);
  EXPECT_EQ(s.allocated_bytes.current, static_cast<int64_t>(32 * gib));
  EXPECT_EQ(s.num_ooms, 1);
  mem.free(a);
  mem.free(b);
  mem.empty_cache(0);
  EXPECT_EQ(mem.stats(0).reserved_bytes.current, 0);
}

// A stream whose worker is stuck in a task until |release| is set: its fence is not reached.
struct BlockedStream {
  Stream stream{"test stream"};
  std::promise<void> release;
  uint64_t sequence = 0;
  BlockedStream() {
    std::shared_future<void> gate = release.get_future().share();
    sequence = stream.enqueue("blocked", [gate] { gate.wait(); });
  }
  ~BlockedStream() { unblock(); }
  void unblock() {
    if (!released) release.set_value();
    released = true;
    stream.synchronize();
  }
  bool released = false;
};

TEST(DeviceMemoryTest, FencedBlockIsReusedInStreamOrder) {
  DeviceMemory mem(config_with({}));
  BlockedStream s1, s2;
  void* a = mem.allocate(0, 4096, nullptr, &s1.stream);
  mem.free(a, {StreamFence{&s1.stream, s1.sequence}});
  // Another stream and the host wait for s1's work; s1 itself reuses the block at once.
  void* on_s2 = mem.allocate(0, 4096, nullptr, &s2.stream);
  void* on_host = mem.allocate(0, 4096, nullptr, nullptr);
  EXPECT_NE(on_s2, a);
  EXPECT_NE(on_host, a);
  EXPECT_TRUE(mem.has_pending_cached(0));
  mem.empty_cache(0);  // keeps the fenced block: s1's work may still use it
  EXPECT_EQ(mem.stats(0).reserved_bytes.current, 3 * 4096);
  void* on_s1 = mem.allocate(0, 4096, nullptr, &s1.stream);
  EXPECT_EQ(on_s1, a);
  mem.free(on_s1, {StreamFence{&s1.stream, s1.sequence}});
  s1.unblock();  // the fence is reached: anyone may reuse the block, or release it
  EXPECT_FALSE(mem.has_pending_cached(0));
  EXPECT_EQ(mem.allocate(0, 4096, nullptr, &s2.stream), a);
  mem.free(a);
  mem.free(on_s2);
  mem.free(on_host);
  mem.empty_cache(0);
  EXPECT_EQ(mem.stats(0).reserved_bytes.current, 0);
}

TEST(DeviceMemoryTest, FormatBytes) {
  EXPECT_EQ(format_bytes(10), "10 bytes");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(24ull << 30), "24.00 GiB");
  // CUDA's format_size keeps the smaller unit up to and including 1024 of it.
  EXPECT_EQ(format_bytes(1024), "1024 bytes");
  EXPECT_EQ(format_bytes(1025), "1.00 KiB");
  EXPECT_EQ(format_bytes(1ull << 20), "1024.00 KiB");
  EXPECT_EQ(format_bytes((1ull << 20) + 1), "1.00 MiB");
  EXPECT_EQ(format_bytes(1ull << 30), "1024.00 MiB");
  EXPECT_EQ(format_bytes(3ull << 40), "3072.00 GiB");
}

}  // namespace
}  // namespace vtrn::runtime
