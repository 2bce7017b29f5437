// A cache key made of 64-bit words (an eager call's signature, a fused group's wiring) and its
// hash.
//
// Promises: equal keys hash equally; hashing is one pass over the words (FNV-1a), cheap enough
// for every eager call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vtrn::torch_adapter::eager {

using WordKey = std::vector<int64_t>;

struct WordKeyHash {
  size_t operator()(const WordKey& k) const noexcept {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    for (int64_t v : k) {
      h ^= static_cast<uint64_t>(v);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

}  // namespace vtrn::torch_adapter::eager
