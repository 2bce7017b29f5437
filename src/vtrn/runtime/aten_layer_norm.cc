#include "vtrn/runtime/aten_layer_norm.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "vtrn/runtime/isa_clones.h"

// Compiled with -ffp-contract=off: a product is rounded before its add unless std::fma says
// otherwise.

namespace vtrn::runtime::aten_layer_norm {
namespace {

struct LaneMoments {
  std::int64_t m0 = 0;
  float m1[kLanes] = {}, m2[kLanes] = {};
};

// utils::CeilLog2: 1 up to 2, else ceil(log2(x)).
int ceil_log2(std::int64_t x) {
  return x <= 2 ? 1 : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(x - 1)));
}

float ratio(std::int64_t part, std::int64_t whole) {
  return whole == 0 ? 0.0f : static_cast<float>(part) / static_cast<float>(whole);
}

// AddMomentsVec: |add| merged into |into|.
void add_lanes(const LaneMoments& add, LaneMoments& into) {
  const float c = ratio(add.m0, into.m0 + add.m0);
  const auto old_m0 = static_cast<float>(into.m0);
  for (int l = 0; l < kLanes; ++l) {
    const float delta = add.m1[l] - into.m1[l];
    const float c_delta = c * delta;
    into.m2[l] = std::fma(delta * old_m0, c_delta, into.m2[l] + add.m2[l]);
    into.m1[l] = into.m1[l] + c_delta;
  }
  into.m0 += add.m0;
}

}  // namespace

VTRN_CLONES Moments row_moments(const float* x, std::int64_t n) {
  const std::int64_t vectors = n / kLanes;
  const std::int64_t chunks = (vectors + kChunk - 1) / kChunk;
  const int depth = ceil_log2(chunks);
  // The stack: 8 levels in place cover rows of 2^7 chunks (16384 floats); longer ones allocate.
  LaneMoments in_place[8];
  std::vector<LaneMoments> allocated;
  LaneMoments* stack = in_place;
  if (depth > 8) {
    allocated.resize(static_cast<std::size_t>(depth));
    stack = allocated.data();
  }
  float c[kChunk];
  for (int j = 0; j < kChunk; ++j) c[j] = 1.0f / static_cast<float>(j + 1);
  for (std::int64_t i = 0; i < chunks; ++i) {
    const float* xc = x + i * kChunk * kLanes;
    LaneMoments chunk;
    chunk.m0 = std::min<std::int64_t>(kChunk, vectors - i * kChunk);
    for (std::int64_t j = 0; j < chunk.m0; ++j)
      for (int l = 0; l < kLanes; ++l) {
        const float v = xc[j * kLanes + l];
        const float d = v - chunk.m1[l];
        chunk.m1[l] = std::fma(d, c[j], chunk.m1[l]);
        chunk.m2[l] = std::fma(d, v - chunk.m1[l], chunk.m2[l]);
      }
    add_lanes(chunk, stack[0]);
    for (std::int64_t j = 1, mask = i + 1; j < depth && (mask & 1) == 0; ++j, mask >>= 1) {
      add_lanes(stack[j - 1], stack[j]);
      stack[j - 1] = LaneMoments{};
    }
  }
  for (int i = 1; i < depth; ++i) add_lanes(stack[i], stack[0]);
  std::int64_t m0 = 0;
  float m1 = 0, m2 = 0;
  for (std::int64_t i = vectors * kLanes; i < n; ++i) {
    const float d = x[i] - m1;
    ++m0;
    m1 = m1 + d / static_cast<float>(m0);
    m2 = m2 + d * (x[i] - m1);
  }
  // AddMoments, lane by lane: each lane holds |vectors| elements.
  for (int l = 0; l < kLanes; ++l) {
    const float cl = ratio(vectors, m0 + vectors);
    const float delta = stack[0].m1[l] - m1;
    const auto old_m0 = static_cast<float>(m0);
    m1 = std::fma(cl, delta, m1);
    m2 = m2 + std::fma(delta * delta * cl, old_m0, stack[0].m2[l]);
    m0 += vectors;
  }
  return {m1, m2 / static_cast<float>(n)};
}

VTRN_CLONES void layer_norm_row(const float* x, std::int64_t n, const float* gamma,
                                const float* beta, float eps, float* y, float* mean, float* rstd) {
  const Moments m = row_moments(x, n);
  const float r = 1.0f / std::sqrt(m.var + eps);
  if (gamma) {
    for (std::int64_t i = 0; i < n; ++i)
      y[i] = std::fma((x[i] - m.mean) * r, gamma[i], beta ? beta[i] : 0.0f);
  } else if (beta) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = std::fma(x[i] - m.mean, r, beta[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) y[i] = (x[i] - m.mean) * r;
  }
  *mean = m.mean;
  *rstd = r;
}

}  // namespace vtrn::runtime::aten_layer_norm
