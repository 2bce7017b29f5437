// The random number generator of a neuron device: Philox 4x32-10 keyed by a seed, with a
// counter offset, as on CUDA. Its state is 16 bytes, (seed: uint64, offset: uint64), the
// layout DTensor's OffsetBasedRNGTracker reads and writes.
//
// Element i of a random op draws from counter (offset + i), so the numbers depend only on
// the seed and the order of ops, and a shard that starts at offset + k draws what the whole
// tensor would have drawn at k.
#pragma once

#include <cstdint>
#include <optional>

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

/// The default generator of |device|.
const at::Generator& default_generator(c10::DeviceIndex device);

}  // namespace vtrn::torch_adapter
