// The device registry: the configuration read from the environment, the visible cores, the
// current device (per thread, else the process's), the cores this process claimed, and the
// device memory behind them.
#include "vtrn/torch/device.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>

#include <c10/util/Exception.h>

#include "vtrn/runtime/core_claim.h"

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

// The thread's device: -1 follows the process's device. A thread pins its device by
// set_device(); a DeviceGuard's temporary switch does not pin it, so that a thread that never
// chose a device keeps following the process's once the guard is gone.
thread_local int tls_current_device = -1;
thread_local bool tls_pinned = false;
// The process's device: -1 until chosen (by the launcher or the first process group), then
// the device of every thread that did not choose its own.
std::atomic<int> process_device{-1};

int resolved_process_device() {
  const int d = process_device.load(std::memory_order_acquire);
  return d >= 0 ? d : 0;
}

// The largest device count is 128 (trn2.48xlarge at LNC1).
constexpr int kMaxDevices = 128;
std::array<std::atomic<bool>, kMaxDevices> claimed_devices{};

runtime::CoreClaims& core_claims() {
  static auto* claims = new runtime::CoreClaims(runtime::node_key());  // leaked: held until exit
  return *claims;
}

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

c10::DeviceIndex current_device() noexcept {
  return static_cast<c10::DeviceIndex>(tls_current_device >= 0 ? tls_current_device
                                                               : resolved_process_device());
}

void set_current_device_unchecked(c10::DeviceIndex index) noexcept {
  // A guard restoring an unpinned thread to the process's device lets it follow that device.
  tls_current_device = !tls_pinned && index == resolved_process_device() ? -1 : index;
}

void switch_device(c10::DeviceIndex index) {
  check_device_index(index);
  tls_current_device = index;
}

void check_device_index(c10::DeviceIndex index) {
  // Every enqueue and free checks its device: a valid index returns at once.
  static const int count = device_count();  // 0 when the configuration is an error
  if (index >= 0 && index < count) return;
  device_config();  // raises the configuration error first, if any
  // A RuntimeError, as CUDA raises for an ordinal it does not have.
  TORCH_CHECK(index >= 0 && index < device_count(),
              "Invalid device id: neuron:", static_cast<int>(index),
              " does not exist; this process sees ", device_count(),
              " neuron devices (neuron:0 to neuron:", device_count() - 1,
              "). NEURON_RT_VISIBLE_CORES and NEURON_RT_NUM_CORES choose which cores these are.");
}

void set_device(c10::DeviceIndex index) {
  check_device_index(index);
  tls_current_device = index;
  tls_pinned = true;
}

c10::DeviceIndex adopt_process_device(c10::DeviceIndex index) {
  int expected = -1;
  const int chosen = tls_pinned ? tls_current_device : index;
  check_device_index(static_cast<c10::DeviceIndex>(chosen));
  process_device.compare_exchange_strong(expected, chosen, std::memory_order_acq_rel);
  return static_cast<c10::DeviceIndex>(process_device.load(std::memory_order_acquire));
}

bool process_device_chosen() noexcept { return process_device.load() >= 0; }

void claim_device(c10::DeviceIndex index) {
  static const bool claims = runtime::launched_worker(runtime::process_env());
  if (!claims || index < 0 || index >= kMaxDevices) return;
  if (claimed_devices[index].load(std::memory_order_acquire)) return;
  const runtime::DeviceConfig& config = device_config();
  const int core = config.visible_cores.at(index);
  const auto holder = core_claims().claim(core);
  TORCH_CHECK(
      !holder, "neuron:", static_cast<int>(index), " is logical core ", core, " of this node (",
      config.describe(), "), which ", holder->description, " already uses; ",
      runtime::describe_process(getpid(), runtime::process_env()),
      " cannot use it too: a NeuronCore belongs to one process. Select each process's own "
      "core before creating tensors: torch.neuron.set_device(int(os.environ[\"LOCAL_RANK\"])) "
      "(vtrn run and init_process_group(\"neuron\") select it for you), or give each "
      "process its own NEURON_RT_VISIBLE_CORES.");
  claimed_devices[index].store(true, std::memory_order_release);
}

bool shapes_only() {
  static const bool on = device_config_error().empty() && device_config().shapes_only;
  return on;
}

namespace {
std::atomic<int64_t> host_read_count{0};
}  // namespace

int64_t host_reads() { return host_read_count.load(std::memory_order_relaxed); }
void count_host_read() { host_read_count.fetch_add(1, std::memory_order_relaxed); }

runtime::DeviceMemory& device_memory() {
  static auto* memory = new runtime::DeviceMemory(device_config());  // leaked: used until exit
  return *memory;
}

}  // namespace vtrn::torch_adapter
