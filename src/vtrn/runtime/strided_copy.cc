#include "vtrn/runtime/strided_copy.h"

#include <algorithm>
#include <cstring>

#include "vtrn/runtime/thread_pool.h"

namespace vtrn::runtime {
namespace {

using Dims = std::vector<std::int64_t>;

// The copy with size-1 dims dropped and adjacent dims merged wherever both views step through
// them as one: a slice of whole rows becomes a few long runs, a transpose keeps two dims.
struct Plan {
  Dims shape, dst, src;
};

Plan simplify(const Dims& shape, const Dims& dst, const Dims& src) {
  Plan p;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!p.shape.empty() && p.dst.back() == dst[d] * shape[d] &&
        p.src.back() == src[d] * shape[d]) {
      p.shape.back() *= shape[d];
      p.dst.back() = dst[d];
      p.src.back() = src[d];
      continue;
    }
    p.shape.push_back(shape[d]);
    p.dst.push_back(dst[d]);
    p.src.push_back(src[d]);
  }
  return p;
}

template <typename T>
void copy_run(T* __restrict d, std::int64_t ds, const T* __restrict s, std::int64_t ss,
              std::int64_t n) {
  if (ds == 1 && ss == 0) {
    std::fill_n(d, n, *s);
    return;
  }
  for (std::int64_t j = 0; j < n; ++j) d[j * ds] = s[j * ss];
}

// One run of |n| elements along the innermost dim.
void copy_run(std::uint8_t* d, std::int64_t ds, const std::uint8_t* s, std::int64_t ss,
              std::int64_t n, int es) {
  if (ds == 1 && ss == 1) {
    std::memcpy(d, s, static_cast<std::size_t>(n * es));
    return;
  }
  switch (es) {
    case 1:
      return copy_run(d, ds, s, ss, n);
    case 2:
      return copy_run(reinterpret_cast<std::uint16_t*>(d), ds,
                      reinterpret_cast<const std::uint16_t*>(s), ss, n);
    case 4:
      return copy_run(reinterpret_cast<std::uint32_t*>(d), ds,
                      reinterpret_cast<const std::uint32_t*>(s), ss, n);
    case 8:
      return copy_run(reinterpret_cast<std::uint64_t*>(d), ds,
                      reinterpret_cast<const std::uint64_t*>(s), ss, n);
    default:
      for (std::int64_t j = 0; j < n; ++j)
        std::memcpy(d + j * ds * es, s + j * ss * es, static_cast<std::size_t>(es));
  }
}

// A transpose's last two dims [r, c], read down columns (src stride 1 along r) and written
// along rows: square tiles keep both sides in cache.
void copy_tiled(std::uint8_t* d, const std::uint8_t* s, const Plan& p, int es) {
  constexpr std::int64_t kTile = 32;
  const std::size_t k = p.shape.size();
  const std::int64_t rows = p.shape[k - 2], cols = p.shape[k - 1];
  for (std::int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (std::int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (std::int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
        copy_run(d + (r * p.dst[k - 2] + c0 * p.dst[k - 1]) * es, p.dst[k - 1],
                 s + (r * p.src[k - 2] + c0 * p.src[k - 1]) * es, p.src[k - 1],
                 std::min(kTile, cols - c0), es);
}

// Rows [lo, hi) of the outermost dim.
void copy_rows(std::uint8_t* dst, const std::uint8_t* src, const Plan& p, int es, std::int64_t lo,
               std::int64_t hi) {
  const std::size_t r = p.shape.size();
  const bool tiled = r >= 2 && p.src[r - 2] == 1 && p.dst[r - 1] == 1 && p.src[r - 1] != 1 &&
                     p.shape[r - 1] >= 8 && p.shape[r - 2] >= 8;
  const std::size_t loop_dims = tiled ? r - 2 : r - 1;  // dims walked outside the inner copy
  Dims idx(loop_dims, 0);
  if (loop_dims > 0) idx[0] = lo;
  const std::int64_t rows_outer = loop_dims > 0 ? hi : 1;
  std::int64_t doff = loop_dims > 0 ? lo * p.dst[0] : 0, soff = loop_dims > 0 ? lo * p.src[0] : 0;
  for (;;) {
    if (loop_dims > 0 && idx[0] >= rows_outer) return;
    if (tiled) {
      // With no dim outside the tile, the rows this call owns are the tile's own.
      const std::int64_t first = loop_dims == 0 ? lo : 0;
      const std::int64_t rows = loop_dims == 0 ? hi - lo : p.shape[r - 2];
      Plan inner{
          {rows, p.shape[r - 1]}, {p.dst[r - 2], p.dst[r - 1]}, {p.src[r - 2], p.src[r - 1]}};
      copy_tiled(dst + (doff + first * p.dst[r - 2]) * es, src + (soff + first * p.src[r - 2]) * es,
                 inner, es);
    } else {
      copy_run(dst + doff * es, p.dst[r - 1], src + soff * es, p.src[r - 1], p.shape[r - 1], es);
    }
    if (loop_dims == 0) return;
    std::size_t d = loop_dims;
    while (d-- > 0) {
      doff += p.dst[d];
      soff += p.src[d];
      if (++idx[d] < (d == 0 ? rows_outer : p.shape[d])) break;
      if (d == 0) return;
      doff -= p.dst[d] * p.shape[d];
      soff -= p.src[d] * p.shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

void strided_copy(std::uint8_t* dst, const StridedView& dst_view, const std::uint8_t* src,
                  const StridedView& src_view, const Dims& shape, int es, int threads) {
  for (std::int64_t n : shape)
    if (n == 0) return;
  dst += dst_view.base * es;
  src += src_view.base * es;
  const Plan p = simplify(shape, dst_view.strides, src_view.strides);
  if (p.shape.empty()) {
    std::memcpy(dst, src, static_cast<std::size_t>(es));
    return;
  }
  std::int64_t n = 1;
  for (std::int64_t s : p.shape) n *= s;
  constexpr std::int64_t kParallelBytes = std::int64_t{1} << 20;
  const std::int64_t outer = p.shape.size() > 1 ? p.shape[0] : 1;
  if (threads <= 1 || outer <= 1 || n * es < kParallelBytes)
    return copy_rows(dst, src, p, es, 0, outer);
  // Pieces of at least 256 KiB.
  const std::int64_t row_bytes = n / outer * es;
  parallel_ranges(outer, ((kParallelBytes >> 2) + row_bytes - 1) / row_bytes, threads,
                  [&](std::int64_t lo, std::int64_t hi) { copy_rows(dst, src, p, es, lo, hi); });
}

void fill_elements(std::uint8_t* dst, const std::uint8_t* value, std::int64_t n, int es) {
  copy_run(dst, 1, value, 0, n, es);
}

}  // namespace vtrn::runtime
