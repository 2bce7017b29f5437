// Device registry, streams, DeviceGuard, allocator, generators and PrivateUse1 hooks.
#include "vtrn/torch/device.h"
#include "vtrn/torch/eager.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/ops/empty.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/core/Storage.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>

#include "vtrn/torch/generator.h"

namespace vtrn::torch_adapter {

//===----------------------------------------------------------------------===//
// Configuration and the current device
//===----------------------------------------------------------------------===//

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

bool launch_blocking() {
  static const bool value = [] {
    const char* v = std::getenv("NEURON_LAUNCH_BLOCKING");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return value;
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

c10::DeviceIndex current_device() noexcept { return tls_current_device; }

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

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

namespace {

// Stream id 0 is each device's default stream; ids 1..kPoolSize are the pool that
// getStreamFromGlobalPool hands out round-robin; higher ids are new streams.
constexpr c10::StreamId kPoolSize = 8;

class DeviceStreams {
 public:
  explicit DeviceStreams(c10::DeviceIndex device) : device_(device) {}

  runtime::Stream& get(c10::StreamId id) {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(id >= 0, "neuron:", static_cast<int>(device_), " has no stream ", id);
    return slot_locked(id);
  }

  c10::StreamId next_pool_id() {
    std::lock_guard<std::mutex> lock(mutex_);
    next_pool_ = next_pool_ % kPoolSize + 1;
    return next_pool_;
  }

  c10::StreamId new_id() {
    std::lock_guard<std::mutex> lock(mutex_);
    const c10::StreamId id = kPoolSize + 1 + static_cast<c10::StreamId>(created_.size());
    created_.push_back(nullptr);
    slot_locked(id);
    return id;
  }

  /// Every stream created so far.
  std::vector<runtime::Stream*> all() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<runtime::Stream*> out;
    for (auto& s : pool_) {
      if (s) out.push_back(s.get());
    }
    for (auto& s : created_) {
      if (s) out.push_back(s.get());
    }
    return out;
  }

 private:
  runtime::Stream& slot_locked(c10::StreamId id) {
    std::unique_ptr<runtime::Stream>* slot;
    if (id <= kPoolSize) {
      slot = &pool_[id];
    } else {
      const size_t index = static_cast<size_t>(id - kPoolSize - 1);
      TORCH_CHECK(index < created_.size(), "neuron:", static_cast<int>(device_), " has no stream ",
                  id);
      slot = &created_[index];
    }
    if (!*slot) {
      *slot = std::make_unique<runtime::Stream>("neuron:" + std::to_string(device_) + " stream " +
                                                std::to_string(id));
    }
    return **slot;
  }

  c10::DeviceIndex device_;
  std::mutex mutex_;
  std::unique_ptr<runtime::Stream> pool_[kPoolSize + 1];  // [0] is the default stream
  std::deque<std::unique_ptr<runtime::Stream>> created_;
  c10::StreamId next_pool_ = 0;
};

DeviceStreams& streams_of(c10::DeviceIndex device) {
  static std::vector<std::unique_ptr<DeviceStreams>>* all = [] {
    auto* v = new std::vector<std::unique_ptr<DeviceStreams>>();  // leaked: workers run until exit
    for (int d = 0; d < device_count(); ++d) {
      v->push_back(std::make_unique<DeviceStreams>(static_cast<c10::DeviceIndex>(d)));
    }
    return v;
  }();
  check_device_index(device);
  return *(*all)[device];
}

thread_local std::vector<c10::StreamId> tls_current_streams;

c10::StreamId& current_stream_id(c10::DeviceIndex device) {
  if (tls_current_streams.size() <= static_cast<size_t>(device))
    tls_current_streams.resize(device + 1, 0);
  return tls_current_streams[device];
}

[[noreturn]] void raise_queued_error(const runtime::QueuedOpError& e) {
  TORCH_CHECK(false, e.what(),
              " (the error surfaced at this synchronization point; set "
              "NEURON_LAUNCH_BLOCKING=1 to raise it at the op that queued the work)");
}

}  // namespace

c10::Stream current_stream(c10::DeviceIndex device) {
  check_device_index(device);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::kPrivateUse1, device),
                     current_stream_id(device));
}

runtime::Stream& runtime_stream(const c10::Stream& stream) {
  // Anything that touches a stream must come after the ops AEE is still holding.
  flush_pending(stream.device_index());
  return streams_of(stream.device_index()).get(stream.id());
}

void enqueue(c10::DeviceIndex device, const char* op, std::function<void()> work) {
  runtime::Stream& stream = runtime_stream(current_stream(device));
  stream.enqueue(op, std::move(work));
  if (launch_blocking()) {
    try {
      stream.synchronize();
    } catch (const runtime::QueuedOpError& e) {
      TORCH_CHECK(false, e.what());
    }
  }
}

void sync_current_stream(c10::DeviceIndex device) {
  try {
    runtime_stream(current_stream(device)).synchronize();
  } catch (const runtime::QueuedOpError& e) {
    raise_queued_error(e);
  }
}

void synchronize(c10::DeviceIndex index) {
  flush_pending(index);
  std::string first_error;
  for (runtime::Stream* stream : streams_of(index).all()) {
    try {
      stream->synchronize();
    } catch (const runtime::QueuedOpError& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (!first_error.empty()) raise_queued_error(runtime::QueuedOpError(first_error));
}

namespace {

//===----------------------------------------------------------------------===//
// DeviceGuard
//===----------------------------------------------------------------------===//

struct NeuronGuardImpl final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return static_type; }

  c10::Device exchangeDevice(c10::Device device) const override {
    TORCH_INTERNAL_ASSERT(device.is_privateuseone());
    const c10::Device old = getDevice();
    if (old.index() != device.index()) set_device(device.index());
    return old;
  }

  c10::Device getDevice() const override { return {static_type, current_device()}; }

  void setDevice(c10::Device device) const override {
    TORCH_INTERNAL_ASSERT(device.is_privateuseone());
    set_device(device.index());
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    tls_current_device = device.index();
  }

  c10::Stream getStream(c10::Device device) const override {
    return current_stream(index_of(device));
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(static_type, index_of(device)));
  }

  c10::Stream getStreamFromGlobalPool(c10::Device device, bool /*high_priority*/) const override {
    const c10::DeviceIndex index = index_of(device);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(static_type, index),
                       streams_of(index).next_pool_id());
  }

  // Priorities are accepted and ignored: each stream has its own worker.
  c10::Stream getNewStream(c10::Device device, int /*priority*/) const override {
    const c10::DeviceIndex index = index_of(device);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(static_type, index),
                       streams_of(index).new_id());
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    const c10::Stream old = current_stream(stream.device_index());
    runtime_stream(stream);  // validates the id
    current_stream_id(stream.device_index()) = stream.id();
    return old;
  }

  c10::DeviceIndex deviceCount() const noexcept override { return torch_device_count(); }

  bool queryStream(const c10::Stream& stream) const override {
    return runtime_stream(stream).query();
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    try {
      runtime_stream(stream).synchronize();
    } catch (const runtime::QueuedOpError& e) {
      raise_queued_error(e);
    }
  }

  void synchronizeDevice(c10::DeviceIndex index) const override { synchronize(index); }

  void record(void** event, const c10::Stream& stream, c10::DeviceIndex device_index,
              c10::EventFlag /*flag*/) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ",
                static_cast<int>(device_index),
                " does not match the recording stream's device neuron:",
                static_cast<int>(stream.device_index()), ".");
    if (*event == nullptr) *event = new runtime::Event();
    static_cast<runtime::Event*>(*event)->record(runtime_stream(stream));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;  // never recorded: nothing to wait for
    static_cast<runtime::Event*>(event)->block(runtime_stream(stream));
  }

  bool queryEvent(void* event) const override {
    return event == nullptr || static_cast<runtime::Event*>(event)->query();
  }

  void synchronizeEvent(void* event) const override {
    if (event != nullptr) static_cast<runtime::Event*>(event)->synchronize();
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<runtime::Event*>(event);
  }

  double elapsedTime(void* start, void* end,
                     const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(start != nullptr && end != nullptr,
                "elapsed_time needs both events recorded; record them on a neuron stream first.");
    try {
      return static_cast<runtime::Event*>(end)->elapsed_ms_since(
          *static_cast<runtime::Event*>(start));
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

//===----------------------------------------------------------------------===//
// Allocator
//===----------------------------------------------------------------------===//

void free_device_block(void* ptr) { device_memory().free(ptr); }

void fill_stat_array(c10::CachingAllocator::StatArray& array, const runtime::MemoryStat& stat) {
  // vtrn has one pool; it is reported as the aggregate and as the large pool.
  for (auto type :
       {c10::CachingAllocator::StatType::AGGREGATE, c10::CachingAllocator::StatType::LARGE_POOL}) {
    auto& s = array[static_cast<size_t>(type)];
    s.current = stat.current;
    s.peak = stat.peak;
    s.allocated = stat.allocated;
    s.freed = stat.freed;
  }
}

class NeuronAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::DeviceIndex device = current_device();
    const c10::Device tagged(c10::kPrivateUse1, device);
    if (nbytes == 0) return {nullptr, nullptr, &free_device_block, tagged};
    runtime::OutOfMemory oom;
    void* ptr = device_memory().allocate(device, nbytes, &oom);
    TORCH_CHECK_WITH(OutOfMemoryError, ptr != nullptr, "neuron out of memory. ",
                     oom.message(device_config()));
    return {ptr, ptr, &free_device_block, tagged};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_device_block; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

  bool initialized() override { return device_config_error().empty(); }

  void emptyCache(c10::MempoolId_t) override {
    // Cached blocks may still be named by queued work only through live tensors, which keep
    // them allocated; releasing the cache is always safe.
    device_memory().empty_cache(-1);
  }

  void recordStream(const c10::DataPtr&, c10::Stream) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    check_device_index(device);
    const runtime::MemoryStats s = device_memory().stats(device);
    c10::CachingDeviceAllocator::DeviceStats out;
    fill_stat_array(out.allocated_bytes, s.allocated_bytes);
    fill_stat_array(out.active_bytes, s.allocated_bytes);
    fill_stat_array(out.requested_bytes, s.requested_bytes);
    fill_stat_array(out.reserved_bytes, s.reserved_bytes);
    fill_stat_array(out.allocation, s.allocations);
    fill_stat_array(out.active, s.allocations);
    fill_stat_array(out.segment, s.segments);
    out.num_ooms = s.num_ooms;
    out.num_alloc_retries = s.num_alloc_retries;
    return out;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    check_device_index(device);
    device_memory().reset_accumulated(device);
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    check_device_index(device);
    device_memory().reset_peak(device);
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device_index(device);
    return {device_memory().bank_free(device), device_memory().capacity(device)};
  }
};

NeuronAllocator& neuron_allocator() {
  static auto* allocator = new NeuronAllocator();  // leaked: tensors may die at exit
  return *allocator;
}

struct RegisterAllocator {
  RegisterAllocator() { c10::SetAllocator(c10::kPrivateUse1, &neuron_allocator()); }
} register_allocator;

// Pinned host memory: page-locked on real hardware; here ordinary host memory that is
// remembered, so is_pinned() and non-blocking copies can tell it apart.
class PinnedAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return {nullptr, nullptr, &free_pinned, c10::Device(c10::kCPU)};
    void* ptr = c10::alloc_cpu(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex());
      blocks().emplace(ptr, nbytes);
    }
    return {ptr, ptr, &free_pinned, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

  static bool contains(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex());
    const auto* p = static_cast<const char*>(ptr);
    for (const auto& [base, size] : blocks()) {
      const auto* b = static_cast<const char*>(base);
      if (p >= b && p < b + size) return true;
    }
    return false;
  }

 private:
  static std::mutex& mutex() {
    static auto* m = new std::mutex();
    return *m;
  }
  static std::unordered_map<void*, size_t>& blocks() {
    static auto* b = new std::unordered_map<void*, size_t>();
    return *b;
  }
  static void free_pinned(void* ptr) {
    if (ptr == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex());
      blocks().erase(ptr);
    }
    c10::free_cpu(ptr);
  }
};

PinnedAllocator& pinned_allocator() {
  static auto* allocator = new PinnedAllocator();
  return *allocator;
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

constexpr uint64_t kDefaultSeed = 67280421310721ull;  // PyTorch's default_rng_seed_val

class NeuronGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit NeuronGeneratorImpl(c10::DeviceIndex device)
      : c10::GeneratorImpl(c10::Device(c10::kPrivateUse1, device),
                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}

  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override {
    const uint64_t s = c10::detail::getNonDeterministicRandom(false);
    set_current_seed(s);
    return s;
  }
  void set_offset(uint64_t offset) override {
    TORCH_CHECK(offset % 4 == 0, "neuron generator offset must be a multiple of 4, got ", offset);
    offset_ = offset;
  }
  uint64_t get_offset() const override { return offset_; }

  std::string packed_state() const {
    std::string state(16, '\0');
    std::memcpy(state.data(), &seed_, 8);
    std::memcpy(state.data() + 8, &offset_, 8);
    return state;
  }

  void set_packed_state(const std::string& state) {
    TORCH_CHECK(state.size() == 16,
                "neuron RNG state must be 16 bytes (seed: uint64, offset: uint64), as "
                "get_rng_state() returns; got ",
                state.size(), " bytes.");
    uint64_t seed = 0, offset = 0;
    std::memcpy(&seed, state.data(), 8);
    std::memcpy(&offset, state.data() + 8, 8);
    seed_ = seed;
    set_offset(offset);
  }

  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    at::Tensor state = at::empty({16}, at::TensorOptions().dtype(at::kByte));
    const std::string packed = packed_state();
    std::memcpy(state.data_ptr(), packed.data(), 16);
    return state.getIntrusivePtr();
  }

  void set_state(const c10::TensorImpl& state) override {
    TORCH_CHECK(
        state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && state.device().is_cpu() &&
            state.is_contiguous(),
        "neuron RNG state must be a contiguous uint8 cpu tensor of 16 bytes (seed: uint64, offset: "
        "uint64), as get_rng_state() returns; got ",
        state.dtype().name(), " on ", state.device().str());
    set_packed_state(std::string(static_cast<const char*>(state.data()), state.numel()));
  }

  PhiloxRange reserve(uint64_t count) {
    const PhiloxRange range{seed_, offset_};
    offset_ += (count + 3) / 4 * 4;
    return range;
  }

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  NeuronGeneratorImpl* clone_impl() const override {
    auto* copy = new NeuronGeneratorImpl(device().index());
    copy->seed_ = seed_;
    copy->offset_ = offset_;
    return copy;
  }

  uint64_t seed_ = kDefaultSeed;
  uint64_t offset_ = 0;
};

std::vector<at::Generator>& default_generators() {
  static auto* generators = [] {
    auto* v = new std::vector<at::Generator>();
    for (int i = 0; i < device_count(); ++i) {
      v->push_back(at::make_generator<NeuronGeneratorImpl>(static_cast<c10::DeviceIndex>(i)));
    }
    return v;
  }();
  return *generators;
}

}  // namespace

const at::Generator& default_generator(c10::DeviceIndex device) {
  const c10::DeviceIndex index = device < 0 ? current_device() : device;
  check_device_index(index);
  return default_generators()[index];
}

PhiloxRange reserve_philox(const std::optional<at::Generator>& generator, c10::DeviceIndex device,
                           uint64_t count) {
  at::Generator gen =
      generator.has_value() && generator->defined() ? *generator : default_generator(device);
  auto* impl = dynamic_cast<NeuronGeneratorImpl*>(gen.unsafeGetGeneratorImpl());
  TORCH_CHECK(impl != nullptr, "Expected a neuron generator for a neuron tensor, got a ",
              gen.device().str(), " generator. Create it with torch.Generator(device=\"neuron\").");
  std::lock_guard<std::mutex> lock(gen.mutex());
  return impl->reserve(count);
}

void manual_seed(c10::DeviceIndex index, uint64_t seed) {
  at::Generator gen = default_generator(index);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
}

std::string rng_state(c10::DeviceIndex index) {
  at::Generator gen = default_generator(index);
  std::lock_guard<std::mutex> lock(gen.mutex());
  auto* impl = static_cast<NeuronGeneratorImpl*>(gen.unsafeGetGeneratorImpl());
  return impl->packed_state();
}

void set_rng_state(c10::DeviceIndex index, const std::string& state) {
  at::Generator gen = default_generator(index);
  std::lock_guard<std::mutex> lock(gen.mutex());
  auto* impl = static_cast<NeuronGeneratorImpl*>(gen.unsafeGetGeneratorImpl());
  impl->set_packed_state(state);
}

uint64_t initial_seed(c10::DeviceIndex index) {
  at::Generator gen = default_generator(index);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.current_seed();
}

namespace {

//===----------------------------------------------------------------------===//
// Hooks
//===----------------------------------------------------------------------===//

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
    const c10::DeviceIndex index = device < 0 ? current_device() : device;
    check_device_index(index);
    return at::make_generator<NeuronGeneratorImpl>(index);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    const auto device = device_memory().device_of(data);
    TORCH_CHECK(device.has_value(), "The pointer ", data, " is not neuron device memory.");
    return {c10::kPrivateUse1, static_cast<c10::DeviceIndex>(*device)};
  }

  bool isPinnedPtr(const void* data) const override { return PinnedAllocator::contains(data); }

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
