// Device registry, DeviceGuard, allocator and PrivateUse1 hooks for the `neuron` device.
#include "vtrn/torch/device.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Storage.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>

namespace vtrn::torch_adapter {

namespace {

// trn2.48xlarge at LNC2, the instance TorchNeuron documents as its default target: 16 chips x
// 4 logical cores. The device runtime issue derives this from the hw layer and from
// NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES.
constexpr c10::DeviceIndex kVisibleLogicalCores = 64;

thread_local c10::DeviceIndex tls_current_device = 0;

}  // namespace

c10::DeviceIndex device_count() noexcept { return kVisibleLogicalCores; }

c10::DeviceIndex current_device() noexcept { return tls_current_device; }

void check_device_index(c10::DeviceIndex index) {
    TORCH_CHECK_INDEX(index >= 0 && index < device_count(), "Invalid device id: neuron:",
                      static_cast<int>(index), " does not exist; this process sees ",
                      static_cast<int>(device_count()), " neuron devices (neuron:0 to neuron:",
                      static_cast<int>(device_count()) - 1, ").");
}

void set_device(c10::DeviceIndex index) {
    check_device_index(index);
    tls_current_device = index;
}

void synchronize(c10::DeviceIndex index) { check_device_index(index); }

namespace {

//===----------------------------------------------------------------------===//
// DeviceGuard
//===----------------------------------------------------------------------===//

// Execution is synchronous, so there is one stream per device (id 0) and it is always idle.
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
        return c10::Stream(c10::Stream::DEFAULT, device);
    }

    c10::Stream exchangeStream(c10::Stream stream) const override {
        return c10::Stream(c10::Stream::DEFAULT, stream.device());
    }

    c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

    bool queryStream(const c10::Stream&) const override { return true; }
    void synchronizeStream(const c10::Stream&) const override {}
    void synchronizeDevice(c10::DeviceIndex index) const override { synchronize(index); }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuardImpl);

//===----------------------------------------------------------------------===//
// Allocator
//===----------------------------------------------------------------------===//

// Host memory tagged with a device. Stats are exact per device; there is no caching and no
// HBM budget yet (the device runtime issue adds both).
class NeuronAllocator final : public c10::DeviceAllocator {
public:
    c10::DataPtr allocate(size_t nbytes) override {
        const c10::DeviceIndex device = current_device();
        if (nbytes == 0) return {nullptr, nullptr, &free_block, c10::Device(c10::kPrivateUse1, device)};
        void* ptr = c10::alloc_cpu(nbytes);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            blocks_[ptr] = Block{nbytes, device};
            on_alloc(stats_for(device), nbytes);
        }
        return {ptr, ptr, &free_block, c10::Device(c10::kPrivateUse1, device)};
    }

    c10::DeleterFnPtr raw_deleter() const override { return &free_block; }

    void copy_data(void* dest, const void* src, std::size_t count) const override {
        std::memcpy(dest, src, count);
    }

    bool initialized() override { return true; }
    void emptyCache(c10::MempoolId_t) override {}
    void recordStream(const c10::DataPtr&, c10::Stream) override {}

    c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
        check_device_index(device);
        std::lock_guard<std::mutex> lock(mutex_);
        return stats_for(device);
    }

    void resetAccumulatedStats(c10::DeviceIndex device) override {
        check_device_index(device);
        std::lock_guard<std::mutex> lock(mutex_);
        auto& stats = stats_for(device);
        for_each_stat(stats, [](c10::CachingAllocator::Stat& s) { s.reset_accumulated(); });
    }

    void resetPeakStats(c10::DeviceIndex device) override {
        check_device_index(device);
        std::lock_guard<std::mutex> lock(mutex_);
        auto& stats = stats_for(device);
        for_each_stat(stats, [](c10::CachingAllocator::Stat& s) { s.reset_peak(); });
    }

    /// The device that owns |ptr|, which may point anywhere inside a block.
    std::optional<c10::DeviceIndex> device_of(const void* ptr) {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto* p = static_cast<const char*>(ptr);
        for (const auto& [base, block] : blocks_) {
            const auto* b = static_cast<const char*>(base);
            if (p >= b && p < b + block.nbytes) return block.device;
        }
        return std::nullopt;
    }

    static NeuronAllocator& instance();

private:
    struct Block {
        size_t nbytes;
        c10::DeviceIndex device;
    };

    static constexpr auto kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    static constexpr auto kLarge = static_cast<size_t>(c10::CachingAllocator::StatType::LARGE_POOL);

    static void free_block(void* ptr) {
        if (ptr == nullptr) return;
        auto& self = instance();
        {
            std::lock_guard<std::mutex> lock(self.mutex_);
            auto it = self.blocks_.find(ptr);
            TORCH_INTERNAL_ASSERT(it != self.blocks_.end(), "neuron allocator: freeing an unknown pointer");
            on_free(self.stats_for(it->second.device), it->second.nbytes);
            self.blocks_.erase(it);
        }
        c10::free_cpu(ptr);
    }

    static void on_alloc(c10::CachingDeviceAllocator::DeviceStats& stats, size_t nbytes) {
        for (size_t pool : {kAll, kLarge}) {
            stats.allocation[pool].increase(1);
            stats.segment[pool].increase(1);
            stats.active[pool].increase(1);
            stats.allocated_bytes[pool].increase(nbytes);
            stats.reserved_bytes[pool].increase(nbytes);
            stats.active_bytes[pool].increase(nbytes);
            stats.requested_bytes[pool].increase(nbytes);
        }
        stats.num_device_alloc += 1;
    }

    static void on_free(c10::CachingDeviceAllocator::DeviceStats& stats, size_t nbytes) {
        for (size_t pool : {kAll, kLarge}) {
            stats.allocation[pool].decrease(1);
            stats.segment[pool].decrease(1);
            stats.active[pool].decrease(1);
            stats.allocated_bytes[pool].decrease(nbytes);
            stats.reserved_bytes[pool].decrease(nbytes);
            stats.active_bytes[pool].decrease(nbytes);
            stats.requested_bytes[pool].decrease(nbytes);
        }
        stats.num_device_free += 1;
    }

    template <typename Fn>
    static void for_each_stat(c10::CachingDeviceAllocator::DeviceStats& stats, Fn fn) {
        for (auto* array : {&stats.allocation, &stats.segment, &stats.active, &stats.inactive_split,
                            &stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
                            &stats.inactive_split_bytes, &stats.requested_bytes}) {
            for (auto& stat : *array) fn(stat);
        }
    }

    c10::CachingDeviceAllocator::DeviceStats& stats_for(c10::DeviceIndex device) {
        if (stats_.size() <= static_cast<size_t>(device)) stats_.resize(device + 1);
        return stats_[device];
    }

    std::mutex mutex_;
    std::unordered_map<void*, Block> blocks_;
    std::vector<c10::CachingDeviceAllocator::DeviceStats> stats_;
};

NeuronAllocator& NeuronAllocator::instance() {
    // Leaked on purpose: tensors may be freed during static destruction at exit.
    static auto* allocator = new NeuronAllocator();
    return *allocator;
}

struct RegisterAllocator {
    RegisterAllocator() { c10::SetAllocator(c10::kPrivateUse1, &NeuronAllocator::instance()); }
} register_allocator;

//===----------------------------------------------------------------------===//
// Generators and hooks
//===----------------------------------------------------------------------===//

// A CPU Mersenne-Twister generator tagged as a neuron device generator; the device runtime
// issue replaces it with the Philox-style (seed, offset) state DTensor expects.
class NeuronGeneratorImpl final : public at::CPUGeneratorImpl {
public:
    explicit NeuronGeneratorImpl(c10::DeviceIndex device) {
        device_ = c10::Device(c10::kPrivateUse1, device);
        key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
    }
};

struct NeuronHooks final : at::PrivateUse1HooksInterface {
    bool isBuilt() const override { return true; }
    bool isAvailable() const override { return true; }
    bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
    c10::DeviceIndex deviceCount() const override { return device_count(); }
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
        static std::once_flag once;
        static std::vector<at::Generator> generators;
        std::call_once(once, [] {
            for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
                generators.push_back(at::make_generator<NeuronGeneratorImpl>(i));
            }
        });
        const c10::DeviceIndex index = device < 0 ? current_device() : device;
        check_device_index(index);
        return generators[index];
    }

    at::Generator getNewGenerator(c10::DeviceIndex device) const override {
        const c10::DeviceIndex index = device < 0 ? current_device() : device;
        check_device_index(index);
        return at::make_generator<NeuronGeneratorImpl>(index);
    }

    at::Device getDeviceFromPtr(void* data) const override {
        const auto device = NeuronAllocator::instance().device_of(data);
        TORCH_CHECK(device.has_value(), "The pointer ", data, " is not neuron device memory.");
        return {c10::kPrivateUse1, *device};
    }

    at::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }

    // FSDP2 frees and re-allocates unsharded parameters through storage.resize_().
    void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_nbytes) const override {
        c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
        TORCH_CHECK(impl->resizable(), "Trying to resize neuron storage that is not resizable.");
        const size_t old_nbytes = impl->nbytes();
        const c10::DeviceGuard guard(impl->device());
        c10::DataPtr data = impl->allocator()->allocate(new_nbytes);
        const size_t keep = std::min(old_nbytes, new_nbytes);
        if (keep > 0) std::memcpy(data.get(), impl->data(), keep);
        impl->set_data_ptr_noswap(std::move(data));
        impl->set_nbytes(new_nbytes);
    }
};

}  // namespace

void manual_seed(c10::DeviceIndex index, uint64_t seed) {
    check_device_index(index);
    auto generator = at::detail::getPrivateUse1Hooks().getDefaultGenerator(index);
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_current_seed(seed);
}

namespace {

struct RegisterHooks {
    RegisterHooks() { at::RegisterPrivateUse1HooksInterface(new NeuronHooks()); }
} register_hooks;

}  // namespace

}  // namespace vtrn::torch_adapter
