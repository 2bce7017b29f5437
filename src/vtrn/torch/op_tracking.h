// Which ATen ops ran on the `neuron` device, and which of them fell back to the CPU.
//
// Promises:
//  * record_executed() is cheap enough for every native kernel call: after the first call
//    from a call site since the last clear, it costs one relaxed atomic load.
//  * record_fallback() warns once per op (until clear_op_tracking()), with the text
//    "Operator 'aten::<name>' fell back to CPU", and records the op as executed too.
//  * All functions are thread safe and never call into Python.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace vtrn::torch_adapter {

namespace detail {
extern std::atomic<uint64_t> tracking_epoch;
void insert_executed(const char* name);
}  // namespace detail

/// Records |name| (for example "aten::fill_.Scalar") as executed on the device. |seen_epoch|
/// is a per-call-site cache so repeat calls skip the locked set insertion.
inline void record_executed(const char* name, std::atomic<uint64_t>& seen_epoch) {
  const uint64_t epoch = detail::tracking_epoch.load(std::memory_order_relaxed);
  if (seen_epoch.load(std::memory_order_relaxed) != epoch) {
    detail::insert_executed(name);
    seen_epoch.store(epoch, std::memory_order_relaxed);
  }
}

/// Records the native kernel "aten::|name|" once per tracking epoch, with a cache per call site;
/// |name| must be a string literal.
#define VTRN_RECORD_OP(name)                                                \
  do {                                                                      \
    static std::atomic<uint64_t> vtrn_seen_epoch{0};                        \
    ::vtrn::torch_adapter::record_executed("aten::" name, vtrn_seen_epoch); \
  } while (false)

/// Records that |name| ran through the CPU fallback and warns the first time.
void record_fallback(const std::string& name);

/// Sorted names of the ops recorded since the last clear.
std::vector<std::string> executed_ops();
std::vector<std::string> fallback_ops();

/// Forgets every recorded op, and which ops have already warned.
void clear_op_tracking();

}  // namespace vtrn::torch_adapter
