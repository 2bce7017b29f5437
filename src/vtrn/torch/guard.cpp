// DeviceGuard for `neuron`: the current device and stream, stream pools and events, through the
// device registry and the streams. Events are runtime events recorded on a stream's queue.
#include <stdexcept>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "vtrn/runtime/stream.h"
#include "vtrn/torch/capability.h"
#include "vtrn/torch/device.h"
#include "vtrn/torch/gil.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {
namespace {

struct NeuronGuardImpl final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return static_type; }

  c10::Device exchangeDevice(c10::Device device) const override {
    TORCH_INTERNAL_ASSERT(device.is_privateuseone());
    const c10::Device old = getDevice();
    if (old.index() != device.index()) switch_device(device.index());
    return old;
  }

  c10::Device getDevice() const override { return {static_type, current_device()}; }

  void setDevice(c10::Device device) const override {
    TORCH_INTERNAL_ASSERT(device.is_privateuseone());
    set_device(device.index());
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    set_current_device_unchecked(device.index());
  }

  c10::Stream getStream(c10::Device device) const override {
    return current_stream(index_of(device));
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(static_type, index_of(device)));
  }

  // As on CUDA, a high-priority stream has the highest priority there is.
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool high_priority) const override {
    return getNewStream(device, high_priority ? stream_priority_range().second : 0);
  }

  // As on CUDA, a "new" stream is the next stream of its priority's pool (torch.Stream() and
  // torch.neuron.Stream() come here). Priorities order nothing: each stream has its own worker.
  c10::Stream getNewStream(c10::Device device, int priority) const override {
    const c10::DeviceIndex index = index_of(device);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(static_type, index),
                       pool_stream_id(index, priority));
  }

  c10::Stream exchangeStream(c10::Stream stream) const override { return exchange_stream(stream); }

  c10::DeviceIndex deviceCount() const noexcept override { return torch_device_count(); }

  // Every visible core is the same kind, so the answer depends only on the instance.
  c10::DeviceCapability getDeviceCapability(c10::Device device) const override {
    check_device_index(index_of(device));
    return device_capability();
  }

  bool queryStream(const c10::Stream& stream) const override {
    return runtime_stream(stream).query();
  }

  // The user's synchronizations: the host waits on the modeled clock too.
  void synchronizeStream(const c10::Stream& stream) const override {
    synchronize_stream(stream);
    host_wait_stream(stream);
  }

  void synchronizeDevice(c10::DeviceIndex index) const override {
    synchronize(index);
    host_wait_all(index);
  }

  // An event keeps the modeled time of its stream's timeline at the record, beside the
  // runtime event: waits join timelines, elapsed_time() is modeled device time.
  void record(void** event, const c10::Stream& stream, c10::DeviceIndex device_index,
              c10::EventFlag /*flag*/) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ",
                static_cast<int>(device_index),
                " does not match the recording stream's device neuron:",
                static_cast<int>(stream.device_index()), ".");
    if (*event == nullptr) *event = new NeuronEvent();
    auto* e = static_cast<NeuronEvent*>(*event);
    runtime::Stream& queue = runtime_stream(stream);  // flushes held groups first
    e->device = stream.device_index();
    e->record(queue, device_clock(stream.device_index()).mark(static_cast<int>(stream.id())));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;  // never recorded: nothing to wait for
    auto* e = static_cast<NeuronEvent*>(event);
    if (e->recorded())
      device_clock(stream.device_index()).wait(static_cast<int>(stream.id()), e->modeled_s());
    e->block(runtime_stream(stream));
  }

  bool queryEvent(void* event) const override {
    return event == nullptr || static_cast<NeuronEvent*>(event)->query();
  }

  void synchronizeEvent(void* event) const override {
    if (event == nullptr) return;
    auto* e = static_cast<NeuronEvent*>(event);
    {
      const WithoutGil no_gil;
      e->synchronize();
    }
    if (e->device >= 0) device_clock(e->device).host_wait(e->modeled_s());
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<NeuronEvent*>(event);
  }

  // Modeled milliseconds; torch.neuron.wall_elapsed_time() gives the host's.
  double elapsedTime(void* start, void* end,
                     const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(start != nullptr && end != nullptr,
                "elapsed_time needs both events recorded; record them on a neuron stream first.");
    try {
      return static_cast<NeuronEvent*>(end)->modeled_elapsed_ms_since(
          *static_cast<NeuronEvent*>(start));
    } catch (const std::logic_error& e) {
      TORCH_CHECK(false, e.what());
    }
  }

  // A queued task holds references to the tensors it uses, so memory is never reused while
  // work on another stream still reads it; there is nothing more to record.
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}

 private:
  static c10::DeviceIndex index_of(c10::Device device) {
    return device.has_index() ? device.index() : current_device();
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuardImpl);

}  // namespace

}  // namespace vtrn::torch_adapter
