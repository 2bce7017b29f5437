// One row of torch's float32 layer norm as ATen's CPU kernel computes it
// (compiler/aten_layer_norm.h). The order was found by matching emulations against torch
// 2.13's x86 wheel, which runs the kernel's AVX2 build (its vectors hold 8 floats) and whose
// compiler fused some multiply-adds; those are std::fma here, every other product is rounded.
#pragma once

#include <cstdint>

namespace vtrn::runtime::aten_layer_norm {

/// RowwiseMoments' float lanes and vectors per chunk (kChunkSize).
constexpr int kLanes = 8;
constexpr int kChunk = 16;

struct Moments {
  float mean = 0, var = 0;  ///< var: the population variance (m2 / n)
};

/// The mean and variance of x[0, n) by RowwiseMoments: the whole vectors in chunks of
/// kChunk, each lane a Welford pass (m1 += d / (j + 1) as d * c_j, m2 += d * (x - m1), both
/// fused), the chunk's moments merged into a binary stack (AddMomentsVec: m1 += c * delta
/// rounded, m2 = fma(delta m0, c delta, m2 + m2_add)), the stack merged from its second level up;
/// then the tail in a scalar Welford pass (rounded), and the lanes merged into it in order
/// (m1 = fma(c, delta, m1), m2 = m2 + fma(delta^2 c, m0, m2_add)).
Moments row_moments(const float* x, std::int64_t n);

/// y[0, n) with rstd = 1 / sqrt(var + eps): fma((x - mean) * rstd, gamma, beta) (beta 0 where
/// null); without gamma, fma(x - mean, rstd, beta), or (x - mean) * rstd without either. Also
/// gives mean and rstd.
void layer_norm_row(const float* x, std::int64_t n, const float* gamma, const float* beta,
                    float eps, float* y, float* mean, float* rstd);

}  // namespace vtrn::runtime::aten_layer_norm
