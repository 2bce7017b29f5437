// The random number generators of `neuron` devices: Philox 4x32-10 keyed by a seed, with a
// counter offset, as on CUDA. A generator's state is 16 bytes, (seed: uint64, offset: uint64),
// the layout DTensor's OffsetBasedRNGTracker reads and writes.
//
// Promises:
//  * Element i of a random op draws from counter (offset + i), so the numbers depend only on
//    the generator's seed and the order of ops, and a shard that starts at offset + k draws
//    what the whole tensor would have drawn at k.
//  * Each device has one default generator, seeded with PyTorch's default seed until set.
//  * The offset is always a multiple of 4; a state with any other offset is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

namespace vtrn::torch_adapter {

/// The (seed, first counter) an op of |count| elements draws from. Advances the generator's
/// offset by |count| rounded up to a multiple of 4 (one Philox block per element group, as
/// DTensor assumes). |generator| empty: the default generator of |device|.
struct PhiloxRange {
  uint64_t seed;
  uint64_t offset;
};
PhiloxRange reserve_philox(const std::optional<at::Generator>& generator, c10::DeviceIndex device,
                           uint64_t count);

/// The default generator of |device| (the current device when negative).
const at::Generator& default_generator(c10::DeviceIndex device);

/// A new generator of |device| (the current device when negative), with the default seed.
at::Generator new_generator(c10::DeviceIndex device);

/// Seeds the default generator of device |index|.
void manual_seed(c10::DeviceIndex index, uint64_t seed);

/// The default generator's state: 16 bytes, seed then offset (little-endian uint64s).
std::string rng_state(c10::DeviceIndex index);
void set_rng_state(c10::DeviceIndex index, const std::string& state);
uint64_t initial_seed(c10::DeviceIndex index);

}  // namespace vtrn::torch_adapter
