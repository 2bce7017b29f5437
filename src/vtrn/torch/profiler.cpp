// What torch.profiler asks of a PrivateUse1 device: its ProfilerStubs. With
// profile(use_device="neuron") or activities=[CPU, PrivateUse1], every op's RecordFunction
// callback calls record() on the way in and out; without stubs PyTorch's default ones throw
// ("PrivateUse1 used in profiler but not enabled"), the callback leaves the op's range open and
// the CPU times come out as garbage.
//
// The stubs time the CPU side only, on c10::getTime() (the profiler's own clock): they create
// no device event. Device activity reaches the trace through the Kineto plugin
// (device_trace.cpp), which also keeps the correlation stack below.
#include "vtrn/torch/profiler.h"

#include <functional>
#include <vector>

#include <c10/core/DeviceGuard.h>
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include "vtrn/torch/device.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {
namespace {

// The ops the profiler is inside on this thread, innermost last (pushed by the profiler).
thread_local std::vector<std::uint64_t> tls_correlations;

using torch::profiler::impl::ProfilerVoidEventStub;

struct NeuronProfilerStubs final : torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    if (device != nullptr) *device = current_device();
    if (event != nullptr) event->reset();
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
  }

  // Never reached with events from record() (they are null); 0 means "no device time".
  float elapsed(const ProfilerVoidEventStub*, const ProfilerVoidEventStub*) const override {
    return 0.0F;
  }

  // No native annotation track (NVTX-style) exists; record_function ranges are in the trace.
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}

  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, current_device()));
    for (int index = 0; index < torch_device_count(); ++index) {
      set_device(static_cast<c10::DeviceIndex>(index));
      op(index);
    }
  }

  void synchronize() const override {
    for (int index = 0; index < torch_device_count(); ++index) {
      torch_adapter::synchronize(static_cast<c10::DeviceIndex>(index));
    }
  }
};

struct RegisterProfilerStubs {
  RegisterProfilerStubs() {
    static NeuronProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
} register_profiler_stubs;

}  // namespace

std::uint64_t profiler_correlation() {
  return tls_correlations.empty() ? 0 : tls_correlations.back();
}

void push_profiler_correlation(std::uint64_t id) { tls_correlations.push_back(id); }

void pop_profiler_correlation() {
  if (!tls_correlations.empty()) tls_correlations.pop_back();
}

}  // namespace vtrn::torch_adapter
