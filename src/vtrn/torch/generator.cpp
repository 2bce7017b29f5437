// The random number generators of `neuron` devices (see generator.h).
#include "vtrn/torch/generator.h"

#include <cstring>
#include <mutex>
#include <vector>

#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/ops/empty.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/util/Exception.h>

#include "vtrn/torch/device.h"

namespace vtrn::torch_adapter {

namespace {

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

at::Generator new_generator(c10::DeviceIndex device) {
  const c10::DeviceIndex index = device < 0 ? current_device() : device;
  check_device_index(index);
  return at::make_generator<NeuronGeneratorImpl>(index);
}

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

}  // namespace vtrn::torch_adapter
