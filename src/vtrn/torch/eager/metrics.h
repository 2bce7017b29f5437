// The eager execution counters vtrn.metrics() reports: compiles, cache hits, executed
// kernels, fused groups, CPU fallbacks and the modeled device time; and compile-only mode,
// which decides whether a counted kernel executes.
//
// Promises:
//  * Counting is lock free (relaxed atomics) and safe from any thread; a snapshot reads each
//    counter once, so it may mix counts from calls that race with it.
//  * Modeled time is summed in picoseconds, so sums of many small kernels stay exact.
#pragma once

#include <cstdint>

#include "vtrn/runtime/compile_cache.h"

namespace vtrn::torch_adapter {

struct EagerMetrics {
  uint64_t compiles = 0;           ///< executables compiled in this process
  uint64_t memory_cache_hits = 0;  ///< calls that found their executable in memory
  uint64_t disk_cache_hits = 0;    ///< executables loaded from the disk cache
  uint64_t executed_kernels = 0;   ///< executables run (a fused group counts once)
  uint64_t fused_groups = 0;       ///< groups of queued ops run as one executable
  uint64_t fused_ops = 0;          ///< ops that ran inside those groups
  uint64_t fallbacks = 0;          ///< calls that ran through the CPU fallback
  uint64_t skipped_kernels = 0;    ///< executables compile-only mode did not run
  double modeled_device_time_us = 0;
  /// Summed over the executed executables: each one's planned peak host scratch (its arena of
  /// intermediates, compiler/buffer_assignment.h) and its intermediates' bytes without reuse.
  uint64_t planned_scratch_bytes = 0;
  uint64_t intermediate_bytes = 0;
};

EagerMetrics eager_metrics();
void reset_eager_metrics();

/// Counts one call that ran through the CPU fallback.
void count_fallback();

/// Compile-only mode (TORCH_NEURONX_COMPILE_ONLY=1, torch_neuronx.compiler.compile_only()):
/// executables compile into the cache but are not run; their outputs hold sentinels. Read from
/// the environment on first use; set_compile_only overrides it for the whole process.
bool compile_only();
void set_compile_only(bool on);

namespace eager {

/// Counts one executable run; |fused_ops| > 0 when it ran a fused group of that many ops. In
/// compile-only mode it counts a skipped kernel instead (and no modeled time). Returns whether
/// the executable is to run: the caller queues its launch with that answer.
bool count_kernel(double modeled_seconds, uint64_t fused_ops);
/// The same, also counting the executable's planned scratch (Executable::peak_scratch_bytes)
/// and its intermediates' bytes.
bool count_kernel(double modeled_seconds, uint64_t fused_ops, const compiler::Executable& exe);

/// Counts where the compile cache found an executable.
void count_cache_result(runtime::CacheSource source);

/// Counts one call that found its executable in memory without asking the compile cache.
void count_memory_hit();

}  // namespace eager

}  // namespace vtrn::torch_adapter
