// Shared by the executor's tests: reference rounding, exactly representable random inputs, and
// compile-and-run.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"
#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::test {

using hlo::Builder;
using hlo::DType;
using hlo::OpKind;
using hlo::TensorType;
using hlo::Value;
using Dims = std::vector<std::int64_t>;

// Round-to-nearest-even of |f| to bf16/f16, by searching the two neighbours in double.
inline double ref_round(DType d, double x) {
  if (d == DType::kF64) return x;
  const float f = static_cast<float>(x);
  if (d == DType::kF32 || std::isnan(f) || std::isinf(f)) return f;
  // Enumerate representable values around f: use the storage conversion's inverse only to list
  // candidates; the choice is made here by distance.
  auto value_of = [&](std::uint32_t bits) {
    return d == DType::kBF16 ? hlo::bf16_to_f32(static_cast<std::uint16_t>(bits))
                             : hlo::f16_to_f32(static_cast<std::uint16_t>(bits));
  };
  double best = 0;
  double best_dist = INFINITY;
  std::uint32_t best_bits = 0;
  // Binary search over the ordered non-negative encodings, then compare the two neighbours.
  const double a = std::fabs(static_cast<double>(f));
  std::uint32_t lo = 0, hi = d == DType::kBF16 ? 0x7F80 : 0x7C00;
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    (value_of(mid) <= a ? lo : hi) = mid;
  }
  for (std::uint32_t c : {lo, hi}) {
    const double v = value_of(c);
    const double dist = std::fabs(v - a);
    if (dist < best_dist || (dist == best_dist && (c & 1) == 0)) {
      best = v;
      best_dist = dist;
      best_bits = c;
    }
  }
  (void)best_bits;
  return std::signbit(f) ? -best : best;
}

inline std::vector<double> random_values(std::int64_t n, double lo, double hi, unsigned seed,
                                         DType d) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) {
    x = u(rng);
    if (hlo::is_integer(d)) x = std::round(x);
    std::uint8_t tmp[8];
    hlo::store_double(d, x, tmp);
    x = hlo::load_double(d, tmp);  // exactly representable in d
  }
  return v;
}

inline std::vector<HostTensor> run(const hlo::Module& m, const std::vector<HostTensor>& in,
                                   bool fusion = true) {
  compiler::CompileOptions o;
  o.fusion = fusion;
  LoadedExecutable exe(compiler::compile(m, o));
  return exe.run(in);
}

inline double tolerance(DType d) {
  switch (d) {
    case DType::kF64:
      return 1e-13;
    case DType::kF32:
      return 4e-7;
    case DType::kBF16:
      return 1.0 / 128;
    default:
      return 1.0 / 1024;
  }
}

inline void expect_close(DType d, bool exact, double got, double want, const std::string& what) {
  if (exact) {
    const double r = ref_round(d, want);
    ASSERT_TRUE(got == r || (std::isnan(got) && std::isnan(r)))
        << what << ": got " << got << " want " << r;
  } else {
    ASSERT_NEAR(got, want, tolerance(d) * std::max(1.0, std::fabs(want))) << what;
  }
}

// |n| values with magnitudes in [lo, hi], exactly representable in |d|, negative in the
// first |period| of every 2 * |period| elements (period 1: -+-+..., period 2: --++--++...).
inline std::vector<double> signed_values(std::int64_t n, double lo, double hi, unsigned seed,
                                         DType d, std::size_t period = 1) {
  std::vector<double> v = random_values(n, lo, hi, seed, d);
  for (std::size_t i = 0; i < v.size(); ++i)
    if ((i / period) % 2 == 0) v[i] = -v[i];
  return v;
}

}  // namespace vtrn::runtime::test
