#include "vtrn/runtime/grouped_mm_call.h"

#include <algorithm>

#include "vtrn/runtime/aten_matmul.h"

namespace vtrn::runtime::grouped_mm {
namespace {

// One product out = lhs [m, k] x rhs [k, n], each given by its element strides: ATen's sgemm
// call where installed, else float64 sums.
void product(std::int64_t m, std::int64_t n, std::int64_t k, const float* lhs,
             const std::int64_t (&ls)[2], const float* rhs, const std::int64_t (&rs)[2], float* out,
             const std::int64_t (&os)[2]) {
  if (aten_matmul::mm_strided(m, n, k, lhs, ls, rhs, rs, out, os)) return;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p)
        sum += double{lhs[i * ls[0] + p * ls[1]]} * rhs[p * rs[0] + j * rs[1]];
      out[i * os[0] + j * os[1]] = static_cast<float>(sum);
    }
}

}  // namespace

Range group_range(const std::int32_t* offs, std::int64_t g, std::int64_t size) {
  // at::slice: a negative end counts from the back, then both are clamped.
  const auto wrap = [size](std::int64_t v) { return v < 0 ? v + size : v; };
  Range r;
  r.begin = std::clamp<std::int64_t>(wrap(g == 0 ? 0 : offs[g - 1]), 0, size);
  r.end = std::clamp<std::int64_t>(wrap(offs[g]), r.begin, size);
  return r;
}

void call(const CustomCallArgs& a) {
  // The types were checked when the module compiled (compiler::grouped_mm_shape).
  const auto* lhs = static_cast<const float*>(a.inputs[0]);
  const auto* rhs = static_cast<const float*>(a.inputs[1]);
  const auto* offs = static_cast<const std::int32_t*>(a.inputs[2]);
  auto* out = static_cast<float*>(a.outputs[0]);
  const hlo::TensorType &at = a.input_types[0], &bt = a.input_types[1];
  const std::int64_t groups = a.input_types[2].dims[0];
  std::fill_n(out, a.output_types[0].num_elements(), 0.0f);  // past the last group: 0
  if (at.rank() == 2 && bt.rank() == 3) {                    // rows of a by group, times b[g]
    const std::int64_t rows = at.dims[0], k = at.dims[1], n = bt.dims[2];
    for (std::int64_t g = 0; g < groups; ++g) {
      const Range r = group_range(offs, g, rows);
      product(r.end - r.begin, n, k, lhs + r.begin * k, {k, 1}, rhs + g * k * n, {n, 1},
              out + r.begin * n, {n, 1});
    }
  } else if (at.rank() == 3 && bt.rank() == 2) {  // a[g] times columns of b by group
    const std::int64_t m = at.dims[1], k = at.dims[2], cols = bt.dims[1];
    for (std::int64_t g = 0; g < groups; ++g) {
      const Range r = group_range(offs, g, cols);
      product(m, r.end - r.begin, k, lhs + g * m * k, {k, 1}, rhs + r.begin, {cols, 1},
              out + r.begin, {cols, 1});
    }
  } else {  // the contraction by group: out[g] = a[:, range] b[range, :]
    const std::int64_t m = at.dims[0], k = at.dims[1], n = bt.dims[1];
    for (std::int64_t g = 0; g < groups; ++g) {
      const Range r = group_range(offs, g, k);
      product(m, n, r.end - r.begin, lhs + r.begin, {k, 1}, rhs + r.begin * n, {n, 1},
              out + g * m * n, {n, 1});
    }
  }
}

}  // namespace vtrn::runtime::grouped_mm
