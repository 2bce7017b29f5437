// The device registry: the configuration read from the environment, the visible cores, the
// calling thread's current device, and the device memory behind them.
#include "vtrn/torch/device.h"

#include <algorithm>
#include <limits>

#include <c10/util/Exception.h>

namespace vtrn::torch_adapter {

namespace {

struct ConfigOrError {
  runtime::DeviceConfig config;
  std::string error;
};

const ConfigOrError& config_or_error() {
  static const ConfigOrError* value = [] {
    auto* v = new ConfigOrError();
    try {
      v->config = runtime::device_config_from_env(runtime::process_env());
    } catch (const std::exception& e) {
      v->error = e.what();
    }
    return v;
  }();
  return *value;
}

thread_local c10::DeviceIndex tls_current_device = 0;

}  // namespace

const std::string& device_config_error() { return config_or_error().error; }

const runtime::DeviceConfig& device_config() {
  const auto& v = config_or_error();
  TORCH_CHECK(v.error.empty(), "The neuron device is unavailable: ", v.error);
  return v.config;
}

int device_count() noexcept {
  const auto& v = config_or_error();
  return v.error.empty() ? v.config.device_count() : 0;
}

c10::DeviceIndex torch_device_count() noexcept {
  return static_cast<c10::DeviceIndex>(
      std::min(device_count(), int{std::numeric_limits<c10::DeviceIndex>::max()}));
}

c10::DeviceIndex current_device() noexcept { return tls_current_device; }

void set_current_device_unchecked(c10::DeviceIndex index) noexcept { tls_current_device = index; }

void check_device_index(c10::DeviceIndex index) {
  device_config();  // raises the configuration error first, if any
  TORCH_CHECK_INDEX(
      index >= 0 && index < device_count(), "Invalid device id: neuron:", static_cast<int>(index),
      " does not exist; this process sees ", device_count(),
      " neuron devices (neuron:0 to neuron:", device_count() - 1,
      "). NEURON_RT_VISIBLE_CORES and NEURON_RT_NUM_CORES choose which cores these are.");
}

void set_device(c10::DeviceIndex index) {
  check_device_index(index);
  tls_current_device = index;
}

runtime::DeviceMemory& device_memory() {
  static auto* memory = new runtime::DeviceMemory(device_config());  // leaked: used until exit
  return *memory;
}

}  // namespace vtrn::torch_adapter
