// The PrivateUse1 hooks of `neuron`: what PyTorch asks a backend outside the dispatcher
// (availability, device count and current device, generators, pinned memory, the device of a
// pointer, and storage resizing for FSDP2).
#include <algorithm>
#include <cstring>
#include <utility>

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Storage.h>
#include <c10/util/Exception.h>

#include "vtrn/torch/device.h"
#include "vtrn/torch/generator.h"
#include "vtrn/torch/host_allocator.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {

namespace {

struct NeuronHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return torch_device_count(); }
  void setCurrentDevice(c10::DeviceIndex device) const override { set_device(device); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const c10::DeviceIndex old = current_device();
    if (device != old) set_device(device);
    return old;
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device);
  }

  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    return new_generator(device);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    const auto device = device_memory().device_of(data);
    TORCH_CHECK(device.has_value(), "The pointer ", data, " is not neuron device memory.");
    return {c10::kPrivateUse1, static_cast<c10::DeviceIndex>(*device)};
  }

  bool isPinnedPtr(const void* data) const override { return is_pinned(data); }

  at::Allocator* getPinnedMemoryAllocator() const override { return &pinned_allocator(); }

  // FSDP2 frees and re-allocates unsharded parameters through storage.resize_(). Queued work
  // that reads the old bytes finishes first.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_nbytes) const override {
    c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "Trying to resize neuron storage that is not resizable.");
    const c10::DeviceIndex device = impl->device().index();
    synchronize(device);
    const size_t old_nbytes = impl->nbytes();
    const c10::DeviceGuard guard(impl->device());
    c10::DataPtr data = impl->allocator()->allocate(new_nbytes);
    const size_t keep = std::min(old_nbytes, new_nbytes);
    if (keep > 0) std::memcpy(data.get(), impl->data(), keep);
    impl->set_data_ptr_noswap(std::move(data));
    impl->set_nbytes(new_nbytes);
  }
};

struct RegisterHooks {
  RegisterHooks() { at::RegisterPrivateUse1HooksInterface(new NeuronHooks()); }
} register_hooks;

}  // namespace

}  // namespace vtrn::torch_adapter
