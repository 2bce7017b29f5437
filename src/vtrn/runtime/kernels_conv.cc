// stablehlo.convolution as im2col + GEMM (OpenBLAS), the way Caffe and PyTorch's slow_conv2d do
// it. Operands are first laid out as input [N, C, *S], kernel [O, Ci, *K] and result
// [N', O, *S'] (a copy only when the dimension numbers say otherwise or the dtype is not the
// compute type); float16/bfloat16/float32 compute in float32 (sgemm), float64 in float64
// (dgemm), and the result is rounded once on store. For each group (feature or batch group)
// and block of result batch rows, the columns of the input windows ([Ci * |K|, rows * |S'|])
// are gathered once and multiplied by the group's kernel rows ([Og, Ci * |K|]). A 1x1 window
// with unit strides, no padding and no dilation multiplies the input in place.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "vtrn/hlo/convolution.h"
#include "vtrn/runtime/executor.h"
#include "vtrn/runtime/executor_kernels.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using Dims = std::vector<std::int64_t>;

namespace {

// The element of |dtype| at |p| as T.
template <typename T>
T load_as(DType dtype, const std::uint8_t* p) {
  switch (dtype) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, p, 4);
      return static_cast<T>(v);
    }
    case DType::kBF16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      return static_cast<T>(hlo::bf16_to_f32(h));
    }
    default:
      return static_cast<T>(hlo::load_double(dtype, p));
  }
}

// |src| (type |t|) with its dims reordered to |order| (order[k] = the source dim that becomes
// dim k), converted to T; |src| itself when that is already the layout and type.
template <typename T>
const T* canonical(const hlo::TensorType& t, const std::uint8_t* src, const Dims& order,
                   std::vector<T>& storage) {
  const bool identity = [&] {
    for (std::size_t k = 0; k < order.size(); ++k)
      if (order[k] != static_cast<std::int64_t>(k)) return false;
    return true;
  }();
  const bool same_type = (std::is_same_v<T, float> && t.dtype == DType::kF32) ||
                         (std::is_same_v<T, double> && t.dtype == DType::kF64);
  if (identity && same_type) return reinterpret_cast<const T*>(src);
  const std::int64_t n = t.num_elements();
  storage.resize(static_cast<std::size_t>(n));
  const Dims st = strides_of(t.dims);
  const int es = hlo::dtype_size(t.dtype);
  const int r = t.rank();
  Dims idx(static_cast<std::size_t>(r), 0), sizes, strides;
  for (std::int64_t d : order) {
    sizes.push_back(t.dims[static_cast<std::size_t>(d)]);
    strides.push_back(st[static_cast<std::size_t>(d)]);
  }
  std::int64_t off = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    storage[static_cast<std::size_t>(i)] = load_as<T>(t.dtype, src + off * es);
    for (int d = r - 1; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      idx[d] = 0;
    }
  }
  return storage.data();
}

void sgemm(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
           std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(lda),
              b, static_cast<blasint>(ldb), 0.0f, c, static_cast<blasint>(ldc));
}

// A weight gradient's GEMM sums over every output position (|k| in the thousands for a small
// kernel), and one float32 dot product that long drifts several times further from the exact
// sum than the CPU's blocked convolution does. So a long |k| is summed in chunks of
// kDepthChunk, whose partial products are then added pairwise: the error grows with
// kDepthChunk + log2(k / kDepthChunk) instead of k.
constexpr std::int64_t kDepthChunk = 128;
constexpr std::int64_t kPartialsBudget = std::int64_t{16} << 20;  // floats

void gemm(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
          std::int64_t ldb, std::int64_t ldc) {
  const std::int64_t chunks = (k + kDepthChunk - 1) / kDepthChunk;
  if (chunks <= 1 || m * n * chunks > kPartialsBudget) {
    sgemm(a, b, c, m, n, k, k, ldb, ldc);
    return;
  }
  std::vector<float> partial(static_cast<std::size_t>(m * n * chunks));
  for (std::int64_t i = 0; i < chunks; ++i) {
    const std::int64_t k0 = i * kDepthChunk;
    sgemm(a + k0, b + k0 * ldb, partial.data() + i * m * n, m, n, std::min(kDepthChunk, k - k0), k,
          ldb, n);
  }
  for (std::int64_t width = 1; width < chunks; width *= 2)
    for (std::int64_t i = 0; i + width < chunks; i += 2 * width) {
      float* into = partial.data() + i * m * n;
      const float* from = partial.data() + (i + width) * m * n;
      for (std::int64_t e = 0; e < m * n; ++e) into[e] += from[e];
    }
  for (std::int64_t r = 0; r < m; ++r)
    std::memcpy(c + r * ldc, partial.data() + r * n, static_cast<std::size_t>(n) * sizeof(float));
}

void gemm(const double* a, const double* b, double* c, std::int64_t m, std::int64_t n,
          std::int64_t k, std::int64_t ldb, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), 1.0, a, static_cast<blasint>(k), b,
              static_cast<blasint>(ldb), 0.0, c, static_cast<blasint>(ldc));
}

// The window geometry of one convolution in canonical layouts.
struct Geometry {
  std::int64_t n = 0, c = 0, o = 0;  // input batch, input features, output features
  std::int64_t out_n = 0;            // result batch
  std::int64_t groups = 1, ci = 0, og = 0;
  bool batch_groups = false;
  Dims in, window, out;    // spatial sizes
  std::int64_t in_sp = 1;  // |S|
  std::int64_t k_sp = 1;   // |K|
  std::int64_t out_sp = 1;
  // Per spatial dim d: for window offset kd and result position od, the input position times
  // the dim's input stride, or -1 when it falls on padding or between dilated elements.
  std::vector<Dims> offsets;
  bool pointwise = false;  // 1x1 window, unit strides, no padding or dilation
};

Geometry geometry(const hlo::ConvAttrs& a, const hlo::TensorType& lt, const hlo::TensorType& kt,
                  const hlo::TensorType& ot) {
  const hlo::ConvDimensionNumbers& d = a.dims;
  Geometry g;
  g.n = lt.dims[d.input_batch];
  g.c = lt.dims[d.input_feature];
  g.o = kt.dims[d.kernel_output_feature];
  g.out_n = ot.dims[d.output_batch];
  g.batch_groups = a.batch_group_count > 1;
  g.groups = a.feature_group_count * a.batch_group_count;
  g.ci = kt.dims[d.kernel_input_feature];
  g.og = g.o / g.groups;
  const std::size_t r = d.input_spatial.size();
  g.pointwise = true;
  for (std::size_t k = 0; k < r; ++k) {
    g.in.push_back(lt.dims[d.input_spatial[k]]);
    g.window.push_back(kt.dims[d.kernel_spatial[k]]);
    g.out.push_back(ot.dims[d.output_spatial[k]]);
    g.in_sp *= g.in.back();
    g.k_sp *= g.window.back();
    g.out_sp *= g.out.back();
    g.pointwise = g.pointwise && g.window.back() == 1 && a.window_strides[k] == 1 &&
                  a.padding_low[k] == 0 && a.padding_high[k] == 0 && a.lhs_dilation[k] == 1;
  }
  std::int64_t in_stride = 1;
  g.offsets.resize(r);
  for (std::size_t k = r; k-- > 0;) {
    Dims& t = g.offsets[k];
    t.assign(static_cast<std::size_t>(g.window[k] * g.out[k]), -1);
    for (std::int64_t kd = 0; kd < g.window[k]; ++kd)
      for (std::int64_t od = 0; od < g.out[k]; ++od) {
        const std::int64_t q = od * a.window_strides[k] + kd * a.rhs_dilation[k] - a.padding_low[k];
        if (q < 0 || q % a.lhs_dilation[k] != 0) continue;
        const std::int64_t i = q / a.lhs_dilation[k];
        if (i < g.in[k]) t[static_cast<std::size_t>(kd * g.out[k] + od)] = i * in_stride;
      }
    in_stride *= g.in[k];
  }
  return g;
}

// Writes the window columns of one input plane |x| ([*S]) for window offset |kflat| into
// |dst| (|S'| values, zero where the window reads padding).
template <typename T>
void fill_row(const Geometry& g, const T* x, std::int64_t kflat, T* dst) {
  const std::size_t r = g.in.size();
  if (r == 0) {
    dst[0] = x[0];
    return;
  }
  // The window offset in each dim.
  Dims kd(r);
  for (std::size_t k = r; k-- > 0;) {
    kd[k] = kflat % g.window[k];
    kflat /= g.window[k];
  }
  const std::int64_t inner = g.out[r - 1];
  const std::int64_t* last = g.offsets[r - 1].data() + kd[r - 1] * inner;
  // Odometer over the outer result dims; the last dim is the tight loop.
  Dims od(r, 0);
  const std::int64_t rows = g.out_sp / std::max<std::int64_t>(inner, 1);
  for (std::int64_t row = 0; row < rows; ++row, dst += inner) {
    std::int64_t base = 0;
    bool valid = true;
    for (std::size_t k = 0; k + 1 < r; ++k) {
      const std::int64_t off = g.offsets[k][static_cast<std::size_t>(kd[k] * g.out[k] + od[k])];
      valid = valid && off >= 0;
      base += off;
    }
    if (!valid) {
      std::fill_n(dst, inner, T(0));
    } else {
      const T* src = x + base;
      for (std::int64_t j = 0; j < inner; ++j) dst[j] = last[j] >= 0 ? src[last[j]] : T(0);
    }
    for (std::size_t k = r - 1; k-- > 0;) {
      if (++od[k] < g.out[k]) break;
      od[k] = 0;
    }
  }
}

template <typename T>
void run(const hlo::Op& op, const hlo::TensorType& lt, const hlo::TensorType& kt,
         const hlo::TensorType& ot, const std::uint8_t* lhs, const std::uint8_t* rhs,
         std::uint8_t* out) {
  const hlo::ConvAttrs& a = op.conv;
  const hlo::ConvDimensionNumbers& d = a.dims;
  const Geometry g = geometry(a, lt, kt, ot);
  Dims in_order{d.input_batch, d.input_feature},
      k_order{d.kernel_output_feature, d.kernel_input_feature};
  in_order.insert(in_order.end(), d.input_spatial.begin(), d.input_spatial.end());
  k_order.insert(k_order.end(), d.kernel_spatial.begin(), d.kernel_spatial.end());
  // The result's canonical dims and where each lands in the declared layout.
  Dims out_order{d.output_batch, d.output_feature};
  out_order.insert(out_order.end(), d.output_spatial.begin(), d.output_spatial.end());
  const bool out_identity = [&] {
    for (std::size_t k = 0; k < out_order.size(); ++k)
      if (out_order[k] != static_cast<std::int64_t>(k)) return false;
    return true;
  }();
  const bool out_direct = out_identity && ((std::is_same_v<T, float> && ot.dtype == DType::kF32) ||
                                           (std::is_same_v<T, double> && ot.dtype == DType::kF64));
  const std::int64_t out_elems = ot.num_elements();
  std::vector<T> y_storage;
  T* y = reinterpret_cast<T*>(out);
  if (!out_direct) {
    y_storage.assign(static_cast<std::size_t>(out_elems), T(0));
    y = y_storage.data();
  }
  const std::int64_t depth = g.ci * g.k_sp;  // GEMM inner size
  if (out_elems > 0 && depth == 0) std::fill_n(y, out_elems, T(0));
  if (out_elems > 0 && depth > 0) {
    std::vector<T> xs, ws;
    const T* x = canonical<T>(lt, lhs, in_order, xs);
    const T* w = canonical<T>(kt, rhs, k_order, ws);
    // Result batch rows per GEMM: enough columns to keep the GEMM efficient when |S'| is small,
    // within a bounded column buffer.
    const std::int64_t max_cols = std::max<std::int64_t>(
        g.out_sp, std::min<std::int64_t>(512, (std::int64_t{64} << 20) /
                                                  static_cast<std::int64_t>(sizeof(T) * depth)));
    const std::int64_t block = g.pointwise ? 1 : std::max<std::int64_t>(1, max_cols / g.out_sp);
    std::vector<T> col, tmp;
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      const std::int64_t c0 = g.batch_groups ? 0 : grp * g.ci;
      const T* wg = w + grp * g.og * depth;
      for (std::int64_t n0 = 0; n0 < g.out_n; n0 += block) {
        const std::int64_t nb = std::min(block, g.out_n - n0);
        const std::int64_t cols = nb * g.out_sp;
        auto input_plane = [&](std::int64_t n, std::int64_t c) {
          const std::int64_t in_n = g.batch_groups ? grp * (g.n / g.groups) + n : n;
          return x + (in_n * g.c + c0 + c) * g.in_sp;
        };
        const T* b;
        if (g.pointwise) {
          b = input_plane(n0, 0);  // [Ci, |S|] rows, |S| == |S'|
        } else {
          col.resize(static_cast<std::size_t>(depth * cols));
          for (std::int64_t c = 0; c < g.ci; ++c)
            for (std::int64_t k = 0; k < g.k_sp; ++k)
              for (std::int64_t nl = 0; nl < nb; ++nl)
                fill_row(g, input_plane(n0 + nl, c), k,
                         col.data() + (c * g.k_sp + k) * cols + nl * g.out_sp);
          b = col.data();
        }
        if (nb == 1) {
          gemm(wg, b, y + (n0 * g.o + grp * g.og) * g.out_sp, g.og, cols, depth, cols, g.out_sp);
          continue;
        }
        tmp.resize(static_cast<std::size_t>(g.og * cols));
        gemm(wg, b, tmp.data(), g.og, cols, depth, cols, cols);
        for (std::int64_t o = 0; o < g.og; ++o)
          for (std::int64_t nl = 0; nl < nb; ++nl)
            std::memcpy(y + ((n0 + nl) * g.o + grp * g.og + o) * g.out_sp,
                        tmp.data() + o * cols + nl * g.out_sp,
                        static_cast<std::size_t>(g.out_sp) * sizeof(T));
      }
    }
  }
  if (out_direct) return;
  // Canonical [N', O, *S'] -> the declared layout and dtype.
  const int rank = ot.rank();
  const Dims ost = strides_of(ot.dims);
  Dims sizes, dst_strides;
  for (std::int64_t k : out_order) {
    sizes.push_back(ot.dims[static_cast<std::size_t>(k)]);
    dst_strides.push_back(ost[static_cast<std::size_t>(k)]);
  }
  const int es = hlo::dtype_size(ot.dtype);
  Dims idx(static_cast<std::size_t>(rank), 0);
  std::int64_t off = 0;
  for (std::int64_t i = 0; i < out_elems; ++i) {
    hlo::store_double(ot.dtype, static_cast<double>(y[i]), out + off * es);
    for (int k = rank - 1; k >= 0; --k) {
      off += dst_strides[k];
      if (++idx[k] < sizes[k]) break;
      off -= dst_strides[k] * sizes[k];
      idx[k] = 0;
    }
  }
}

}  // namespace

void convolution(const hlo::Block& b, const hlo::Op& op, const std::uint8_t* lhs,
                 const std::uint8_t* rhs, std::uint8_t* out) {
  const hlo::TensorType& lt = b.type(op.operands[0]);
  const hlo::TensorType& kt = b.type(op.operands[1]);
  const hlo::TensorType& ot = b.type(op.results[0]);
  if (!hlo::is_float(lt.dtype))
    throw ExecError("stablehlo.convolution on " + lt.str() +
                    " is not supported by the vtrn executor (floats only)");
  if (lt.dtype == DType::kF64)
    run<double>(op, lt, kt, ot, lhs, rhs, out);
  else
    run<float>(op, lt, kt, ot, lhs, rhs, out);
}

}  // namespace vtrn::runtime::kernels
