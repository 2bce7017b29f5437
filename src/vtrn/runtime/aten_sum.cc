#include "vtrn/runtime/aten_sum.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

#include "vtrn/runtime/isa_clones.h"

// row_sum is cloned per instruction set (isa_clones.h) with every helper inlined into it, so
// that a W-lane accumulator is one vector register where the CPU has one (the baseline build adds
// it as 4-lane SSE pieces, 5x slower on a row).
#define VTRN_INLINE __attribute__((always_inline)) inline

namespace vtrn::runtime::aten_sum {

int level_power(std::int64_t rows) {
  // utils::CeilLog2: 1 up to 2, else ceil(log2(rows)).
  const int ceil_log2 =
      rows <= 2 ? 1 : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(rows - 1)));
  return std::max(4, ceil_log2 / kLevels);
}
namespace {

std::atomic<int> g_lanes{8};

// W float lanes added lane by lane: one GCC vector, so that the accumulators stay in
// registers (an array of lanes was kept on the stack, 4x slower on a 256-element row).
template <int W>
struct Lanes {
  typedef float V __attribute__((vector_size(W * sizeof(float))));
  V v;
  VTRN_INLINE void zero() { v = V{}; }
  VTRN_INLINE void add(const float* x) {
    V t;
    std::memcpy(&t, x, sizeof(t));
    v = v + t;
  }
  VTRN_INLINE void add(const Lanes& o) { v = v + o.v; }
  VTRN_INLINE float lane(int l) const {
    float out[W];
    std::memcpy(out, &v, sizeof(out));
    return out[l];
  }
};

// One lane: ATen's scalar_inner_sum, for rows shorter than a vector.
template <>
struct Lanes<1> {
  float v;
  VTRN_INLINE void zero() { v = 0.0f; }
  VTRN_INLINE void add(const float* x) { v = v + *x; }
  VTRN_INLINE void add(const Lanes& o) { v = v + o.v; }
  VTRN_INLINE float lane(int) const { return v; }
};

// multi_row_sum<vacc, 4>: |size| rows of 4 vectors (row i at x + i * 4 * W), into 4
// accumulators through 4 levels. Level 0, added to on every row, is four named accumulators
// so that they stay in registers (as a [levels][4] array GCC kept them on the stack, and each
// add waited on a store and a reload: 3x slower on a row of 256 floats); levels 1..3 change once
// per 2^p rows.
template <int W>
VTRN_INLINE void multi_row_sum(const float* x, std::int64_t size, Lanes<W> out[kIlp]) {
  const int level_power = aten_sum::level_power(size);
  const std::int64_t level_step = std::int64_t{1} << level_power;
  const std::int64_t level_mask = level_step - 1;
  Lanes<W> a0, a1, a2, a3;
  a0.zero();
  a1.zero();
  a2.zero();
  a3.zero();
  Lanes<W> upper[kLevels - 1][kIlp];  // levels 1, 2, 3
  for (auto& level : upper)
    for (auto& a : level) a.zero();
  auto add_row = [&](std::int64_t i) {
    const float* r = x + i * kIlp * W;
    a0.add(r);
    a1.add(r + W);
    a2.add(r + 2 * W);
    a3.add(r + 3 * W);
  };
  std::int64_t i = 0;
  while (i + level_step <= size) {
    for (std::int64_t j = 0; j < level_step; ++j, ++i) add_row(i);
    upper[0][0].add(a0);
    upper[0][1].add(a1);
    upper[0][2].add(a2);
    upper[0][3].add(a3);
    a0.zero();
    a1.zero();
    a2.zero();
    a3.zero();
    if ((i & (level_mask << level_power)) != 0) continue;
    for (int j = 2; j < kLevels; ++j) {
      for (int k = 0; k < kIlp; ++k) {
        upper[j - 1][k].add(upper[j - 2][k]);
        upper[j - 2][k].zero();
      }
      if ((i & (level_mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < size; ++i) add_row(i);
  for (int j = 0; j < kLevels - 1; ++j) {
    a0.add(upper[j][0]);
    a1.add(upper[j][1]);
    a2.add(upper[j][2]);
    a3.add(upper[j][3]);
  }
  out[0] = a0;
  out[1] = a1;
  out[2] = a2;
  out[3] = a3;
}

// row_sum over |size| elements of W lanes each (W == 1: scalars).
template <int W>
VTRN_INLINE Lanes<W> ilp_row_sum(const float* x, std::int64_t size) {
  Lanes<W> partial[kIlp];
  const std::int64_t size_ilp = size / kIlp;
  if (size_ilp > 0) {
    multi_row_sum<W>(x, size_ilp, partial);
  } else {
    for (auto& p : partial) p.zero();
  }
  for (std::int64_t i = size_ilp * kIlp; i < size; ++i) partial[0].add(x + i * W);
  for (int k = 1; k < kIlp; ++k) partial[0].add(partial[k]);
  return partial[0];
}

template <int W>
VTRN_INLINE float inner_sum(const float* x, std::int64_t n) {
  const std::int64_t vectors = n / W;
  const Lanes<W> lanes = ilp_row_sum<W>(x, vectors);
  float total = 0;
  for (std::int64_t k = vectors * W; k < n; ++k) total = total + x[k];
  for (int l = 0; l < W; ++l) total = total + lanes.lane(l);
  return total;
}

// vec::reduce_all's order over W lanes: the first W elements start the lanes, each further
// whole vector is added lane by lane, the tail's k elements to the first k lanes; then the lanes
// fold in halves (lane l += lane l + W/2, then + W/4, ... as vec_reduce_all's shuffles pair them)
// and lane 0 is the sum.
template <int W>
VTRN_INLINE float reduce_all_sum(const float* x, std::int64_t n) {
  Lanes<W> acc;
  std::memcpy(&acc.v, x, sizeof(acc.v));
  std::int64_t d = W;
  for (; d + W <= n; d += W) acc.add(x + d);
  float lane[W];
  std::memcpy(lane, &acc.v, sizeof(lane));
  for (std::int64_t k = 0; d + k < n; ++k) lane[k] = lane[k] + x[d + k];
  for (int half = W / 2; half >= 1; half /= 2)
    for (int l = 0; l < half; ++l) lane[l] = lane[l] + lane[l + half];
  return lane[0];
}

}  // namespace

void set_vector_lanes(int lanes) {
  if (lanes == 8 || lanes == 16) g_lanes.store(lanes, std::memory_order_relaxed);
}

int vector_lanes() { return g_lanes.load(std::memory_order_relaxed); }

VTRN_CLONES float row_sum(const float* x, std::int64_t n) {
  if (n < kSumLanes) return ilp_row_sum<1>(x, n).lane(0);  // scalar_inner_sum
  return inner_sum<kSumLanes>(x, n);
}

VTRN_CLONES float reduce_all_row_sum(const float* x, std::int64_t n) {
  const int w = vector_lanes();
  if (n < w) {  // vec_reduce_all's slow path: lane 0 adds the others in order
    float total = n > 0 ? x[0] : 0.0f;
    for (std::int64_t k = 1; k < n; ++k) total = total + x[k];
    return total;
  }
  return w == 16 ? reduce_all_sum<16>(x, n) : reduce_all_sum<8>(x, n);
}

}  // namespace vtrn::runtime::aten_sum
