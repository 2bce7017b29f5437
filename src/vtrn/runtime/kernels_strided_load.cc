// Strided loads of a fused loop (kernels_strided_load.h).
#include "vtrn/runtime/kernels_strided_load.h"

#include <algorithm>

#include "vtrn/runtime/kernels_elementwise.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using Cls = FusedProgram::Cls;
using elementwise::load_contiguous;
using elementwise::load_elem;

// dst[at + j] = element off + j * stride of |p| (of dtype |d|), in the loop class |c|, for j <
// n: a broadcast operand's run along the domain's last dim. Whole runs, not single elements,
// are dispatched on the dtype: a per-element switch cost more than the arithmetic it fed.
void load_run(DType d, Cls c, const std::uint8_t* p, std::int64_t off, std::int64_t stride,
              std::int64_t n, void* dst, std::int64_t at) {
  if (stride == 1) {
    const int width = c == Cls::kF32 ? 4 : 8;
    load_contiguous(d, p, off, n, static_cast<std::uint8_t*>(dst) + at * width);
    return;
  }
  if (c == Cls::kF32) {
    float* o = static_cast<float*>(dst) + at;
    if (stride == 0) {
      std::fill_n(o, n, load_elem<float>(d, p, off));
    } else if (d == DType::kF32) {
      const auto* f = reinterpret_cast<const float*>(p) + off;
      if (stride == 2)
        load_every_other(f, o, n);
      else
        for (std::int64_t j = 0; j < n; ++j) o[j] = f[j * stride];
    } else if (d == DType::kBF16) {
      const auto* h = reinterpret_cast<const std::uint16_t*>(p) + off;
      for (std::int64_t j = 0; j < n; ++j) o[j] = hlo::bf16_to_f32(h[j * stride]);
    } else {
      for (std::int64_t j = 0; j < n; ++j) o[j] = load_elem<float>(d, p, off + j * stride);
    }
  } else if (c == Cls::kF64) {
    double* o = static_cast<double*>(dst) + at;
    if (stride == 0)
      std::fill_n(o, n, load_elem<double>(d, p, off));
    else
      for (std::int64_t j = 0; j < n; ++j) o[j] = load_elem<double>(d, p, off + j * stride);
  } else {
    std::int64_t* o = static_cast<std::int64_t*>(dst) + at;
    if (stride == 0) {
      std::fill_n(o, n, load_elem<std::int64_t>(d, p, off));
    } else if (d == DType::kI64) {
      const auto* v = reinterpret_cast<const std::int64_t*>(p) + off;
      for (std::int64_t j = 0; j < n; ++j) o[j] = v[j * stride];
    } else {
      for (std::int64_t j = 0; j < n; ++j) o[j] = load_elem<std::int64_t>(d, p, off + j * stride);
    }
  }
}

}  // namespace vtrn::runtime::kernels
