#include "vtrn/torch/eager/metrics.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace vtrn::torch_adapter {

namespace {

struct Counters {
  std::atomic<uint64_t> compiles{0}, memory_hits{0}, disk_hits{0}, kernels{0}, groups{0},
      fused_ops{0}, fallbacks{0}, skipped{0};
  std::atomic<uint64_t> modeled_ps{0};  // picoseconds, so sums of small kernels stay exact
  std::atomic<uint64_t> scratch_bytes{0}, intermediate_bytes{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

std::atomic<bool>& compile_only_flag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("TORCH_NEURONX_COMPILE_ONLY");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }()};
  return on;
}

}  // namespace

bool compile_only() { return compile_only_flag().load(std::memory_order_acquire); }

void set_compile_only(bool on) { compile_only_flag().store(on, std::memory_order_release); }

namespace eager {

bool count_kernel(double modeled_seconds, uint64_t fused_ops) {
  Counters& c = counters();
  if (compile_only()) {
    c.skipped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  c.kernels.fetch_add(1, std::memory_order_relaxed);
  c.modeled_ps.fetch_add(static_cast<uint64_t>(modeled_seconds * 1e12), std::memory_order_relaxed);
  if (fused_ops > 0) {
    c.groups.fetch_add(1, std::memory_order_relaxed);
    c.fused_ops.fetch_add(fused_ops, std::memory_order_relaxed);
  }
  return true;
}

bool count_kernel(double modeled_seconds, uint64_t fused_ops, const compiler::Executable& exe) {
  if (!count_kernel(modeled_seconds, fused_ops)) return false;
  Counters& c = counters();
  c.scratch_bytes.fetch_add(static_cast<uint64_t>(exe.peak_scratch_bytes()),
                            std::memory_order_relaxed);
  c.intermediate_bytes.fetch_add(static_cast<uint64_t>(exe.buffers.intermediate_bytes),
                                 std::memory_order_relaxed);
  return true;
}

void count_cache_result(runtime::CacheSource source) {
  Counters& c = counters();
  switch (source) {
    case runtime::CacheSource::kCompiled:
      c.compiles.fetch_add(1, std::memory_order_relaxed);
      break;
    case runtime::CacheSource::kMemory:
      c.memory_hits.fetch_add(1, std::memory_order_relaxed);
      break;
    case runtime::CacheSource::kDisk:
      c.disk_hits.fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

void count_memory_hit() { counters().memory_hits.fetch_add(1, std::memory_order_relaxed); }

}  // namespace eager

void count_fallback() { counters().fallbacks.fetch_add(1, std::memory_order_relaxed); }

EagerMetrics eager_metrics() {
  const Counters& c = counters();
  EagerMetrics m;
  m.compiles = c.compiles.load();
  m.memory_cache_hits = c.memory_hits.load();
  m.disk_cache_hits = c.disk_hits.load();
  m.executed_kernels = c.kernels.load();
  m.fused_groups = c.groups.load();
  m.fused_ops = c.fused_ops.load();
  m.fallbacks = c.fallbacks.load();
  m.skipped_kernels = c.skipped.load();
  m.modeled_device_time_us = static_cast<double>(c.modeled_ps.load()) * 1e-6;
  m.planned_scratch_bytes = c.scratch_bytes.load();
  m.intermediate_bytes = c.intermediate_bytes.load();
  return m;
}

void reset_eager_metrics() {
  Counters& c = counters();
  for (auto* a : {&c.compiles, &c.memory_hits, &c.disk_hits, &c.kernels, &c.groups, &c.fused_ops,
                  &c.fallbacks, &c.skipped, &c.modeled_ps, &c.scratch_bytes, &c.intermediate_bytes})
    a->store(0);
}

}  // namespace vtrn::torch_adapter
