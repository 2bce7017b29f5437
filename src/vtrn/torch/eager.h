// Eager execution of lowered ATen ops on the `neuron` device.
//
// Promises:
//  * Every op in the lowering registry is registered for the PrivateUse1 key. A call is
//    described by a cheap signature (op, tensor dtypes and sizes, static arguments, scalar
//    kinds); a repeat call finds its executable in memory without building, printing or hashing
//    HLO, and without Python.
//  * A first call lowers the op to a one-op StableHLO module and takes the executable from the
//    compile cache (memory, disk under TORCH_NEURONX_NEFF_CACHE_DIR, else compiled and stored).
//  * Outputs are allocated through the device allocator; the executable is queued on the
//    current stream. Non-contiguous inputs are packed on the stream first; outputs that are not
//    contiguous, or overlap an input, are written through a staging buffer.
//  * A call the lowering does not support (an unclaimed dtype, an argument value it does not
//    implement) runs through the CPU fallback and is recorded as a fallback, once per signature.
//  * With TORCH_NEURONX_ENABLE_CONCATENATION=1 (and deterministic algorithms off), queued
//    elementwise ops are held in a group and run as one fused executable when the group ends:
//    a host read, a synchronize, a collective, a non-fusable op or the group limit.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace vtrn::torch_adapter {

struct EagerMetrics {
  uint64_t compiles = 0;           ///< executables compiled in this process
  uint64_t memory_cache_hits = 0;  ///< calls that found their executable in memory
  uint64_t disk_cache_hits = 0;    ///< executables loaded from the disk cache
  uint64_t executed_kernels = 0;   ///< executables run (a fused group counts once)
  uint64_t fused_groups = 0;       ///< groups of queued ops run as one executable
  uint64_t fused_ops = 0;          ///< ops that ran inside those groups
  uint64_t fallbacks = 0;          ///< calls that ran through the CPU fallback
  double modeled_device_time_us = 0;
};

EagerMetrics eager_metrics();
void reset_eager_metrics();

/// Every ATen op with a PrivateUse1 kernel: (name, dtypes, "lowered" | "runtime").
std::vector<std::tuple<std::string, std::vector<std::string>, std::string>> native_ops();

/// The CPU fallback (kernels.cpp), also used by lowered ops for calls they do not support.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
/// Counts one fallback call in the metrics.
void count_fallback();

/// Runs the pending fused group of |device|'s current stream, if any (AEE). Called before
/// anything that must see the results of queued work: host reads, synchronize, collectives.
void flush_pending(int device);
/// Whether Adaptive Eager Execution is on (TORCH_NEURONX_ENABLE_CONCATENATION=1, read once).
bool concatenation_enabled();

}  // namespace vtrn::torch_adapter
