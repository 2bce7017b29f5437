#include "vtrn/runtime/aten_norm.h"

#include <cmath>
#include <cstring>

#include "vtrn/hlo/dtype.h"
#include "vtrn/runtime/isa_clones.h"

// Compiled with -ffp-contract=off: every product is rounded before its add unless std::fma
// says otherwise, as in the loops these reproduce.

namespace vtrn::runtime::aten_norm {
namespace {

// The kLanes accumulators as one GCC vector, so that they stay in a register.
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

// acc + x * x for one vector of x (the product rounded, then the add).
__attribute__((always_inline)) inline void add_squares(Lanes& acc, const float* x) {
  Lanes v;
  std::memcpy(&v, x, sizeof v);
  acc = acc + v * v;
}
__attribute__((always_inline)) inline void add_squares(Lanes& acc, const std::uint16_t* x) {
  Lanes v;
  for (int l = 0; l < kLanes; ++l) v[l] = hlo::bf16_to_f32(x[l]);
  acc = acc + v * v;
}

inline float load(const float* x, std::int64_t i) { return x[i]; }
inline float load(const std::uint16_t* x, std::int64_t i) { return hlo::bf16_to_f32(x[i]); }

// The lanes after the vector loop, added in order, then the tail from |d|.
template <typename T>
__attribute__((always_inline)) inline float finish(const Lanes& lanes, const T* x, std::int64_t d,
                                                   std::int64_t n) {
  float acc = lanes[0];
  for (int j = 1; j < kLanes; ++j) acc = acc + lanes[j];
  const std::int64_t grouped = d + (n - d) / kTailGroup * kTailGroup;
  for (; d < grouped; ++d) {
    const float v = load(x, d);
    acc = acc + v * v;
  }
  for (; d < n; ++d) {
    const float v = load(x, d);
    acc = std::fma(v, v, acc);
  }
  return std::sqrt(acc);
}

}  // namespace

// float32 steps one vector, bfloat16 two (Vectorized<BFloat16> holds 16).
VTRN_CLONES float norm2_vectorized(const float* x, std::int64_t n) {
  Lanes lanes = {};
  const std::int64_t whole = n - n % kLanes;
  for (std::int64_t d = 0; d < whole; d += kLanes) add_squares(lanes, x + d);
  return finish(lanes, x, whole, n);
}

VTRN_CLONES float norm2_vectorized(const std::uint16_t* x, std::int64_t n) {
  constexpr int kStep = 2 * kLanes;
  Lanes lanes = {};
  const std::int64_t whole = n - n % kStep;
  for (std::int64_t d = 0; d < whole; d += kStep) {
    add_squares(lanes, x + d);
    add_squares(lanes, x + d + kLanes);
  }
  return finish(lanes, x, whole, n);
}

namespace {

template <typename T>
float in_order(const T* x, std::int64_t n, int ord) {
  float acc = 0.0f;
  if (ord == 1) {
    for (std::int64_t i = 0; i < n; ++i) acc = acc + std::fabs(load(x, i));
    return acc;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = load(x, i);
    acc = acc + v * v;
  }
  return std::sqrt(acc);
}

}  // namespace

float norm_in_order(const float* x, std::int64_t n, int ord) { return in_order(x, n, ord); }
float norm_in_order(const std::uint16_t* x, std::int64_t n, int ord) { return in_order(x, n, ord); }

}  // namespace vtrn::runtime::aten_norm
