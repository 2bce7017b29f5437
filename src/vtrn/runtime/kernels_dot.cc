// dot_general: operands are laid out as [batch, m, k] and [batch, k, n] (or passed transposed
// where they are stored so) and multiplied by host_matmul (oneDNN) with float32 accumulation:
// bf16 x bf16 on the CPU's bf16 kernels, every other floating mix widened to float32; float64
// and integers through double (cblas_dgemm / exact loops). Results are stored with
// round-to-nearest-even.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "vtrn/runtime/aten_matmul.h"
#include "vtrn/runtime/executor.h"
#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/host_matmul.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using Dims = std::vector<std::int64_t>;

constexpr std::size_t kMaxMatmulRank = 12;  // oneDNN's DNNL_MAX_NDIMS

namespace {

// Copies |src| (type |t|) permuted by |perm| into a contiguous array of T.
template <typename T>
void permute_to(const hlo::TensorType& t, const std::uint8_t* src, const Dims& perm, T* dst) {
  const Dims st = strides_of(t.dims);
  Dims out_dims, s;
  for (std::int64_t p : perm) {
    out_dims.push_back(t.dims[p]);
    s.push_back(st[p]);
  }
  const std::int64_t n = t.num_elements();
  const int r = static_cast<int>(perm.size());
  Dims idx(static_cast<std::size_t>(r), 0);
  std::int64_t off = 0;
  const int es = hlo::dtype_size(t.dtype);
  const bool f32 = t.dtype == DType::kF32;
  for (std::int64_t i = 0; i < n; ++i) {
    if (f32) {
      float v;
      std::memcpy(&v, src + off * 4, 4);
      dst[i] = static_cast<T>(v);
    } else {
      dst[i] = static_cast<T>(hlo::load_double(t.dtype, src + off * es));
    }
    for (int d = r - 1; d >= 0; --d) {
      off += s[d];
      if (++idx[d] < out_dims[d]) break;
      off -= s[d] * out_dims[d];
      idx[d] = 0;
    }
  }
}

// |t|'s elements as float32, in storage order.
void widen(const hlo::TensorType& t, const std::uint8_t* src, float* dst) {
  const std::int64_t n = t.num_elements();
  if (t.dtype == DType::kBF16) {
    const auto* h = reinterpret_cast<const std::uint16_t*>(src);
    for (std::int64_t i = 0; i < n; ++i) dst[i] = hlo::bf16_to_f32(h[i]);
  } else if (t.dtype == DType::kF32) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  } else {
    const int es = hlo::dtype_size(t.dtype);
    for (std::int64_t i = 0; i < n; ++i)
      dst[i] = static_cast<float>(hlo::load_double(t.dtype, src + i * es));
  }
}

// The stride of |t|'s dims |group| read as one dim in that order, or -1 where they are not
// one arithmetic progression in memory. Size-1 dims are skipped; a group of them gets
// |empty|.
std::int64_t merged_stride(const Dims& dims, const Dims& strides, const Dims& group,
                           std::int64_t empty) {
  std::int64_t stride = -1, expect = 0;
  for (std::size_t i = group.size(); i-- > 0;) {
    const std::int64_t d = group[i];
    if (dims[d] == 1) continue;
    if (stride < 0) {
      stride = strides[d];
      expect = strides[d] * dims[d];
    } else if (strides[d] != expect) {
      return -1;
    } else {
      expect *= dims[d];
    }
  }
  return stride < 0 ? empty : stride;
}

// |t|'s strides over [batch..., first, second] when read in place: one per batch dim, then
// the merged strides of the |first| and |second| groups; empty where a group is not
// mergeable.
Dims in_place_strides(const hlo::TensorType& t, const Dims& batch, const Dims& first,
                      const Dims& second) {
  const Dims st = strides_of(t.dims);
  const std::int64_t whole = std::max<std::int64_t>(t.num_elements(), 1);
  Dims out;
  for (std::int64_t d : batch) out.push_back(t.dims[d] == 1 ? whole : st[d]);
  const std::int64_t a = merged_stride(t.dims, st, first, whole);
  const std::int64_t b = merged_stride(t.dims, st, second, whole);
  if (a < 0 || b < 0) return {};
  out.push_back(a);
  out.push_back(b);
  return out;
}

bool is_identity(const Dims& p) {
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

}  // namespace

void dot_general(const hlo::Block& b, const hlo::Op& op, const std::uint8_t* lhs,
                 const std::uint8_t* rhs, std::uint8_t* out) {
  const hlo::TensorType& lt = b.type(op.operands[0]);
  const hlo::TensorType& rt = b.type(op.operands[1]);
  const hlo::TensorType& ot = b.type(op.results[0]);
  if (hlo::is_complex(lt.dtype) || hlo::is_complex(rt.dtype))
    throw ExecError("stablehlo.dot_general on complex64 is not supported by the vtrn executor");
  const hlo::DotDims& d = op.dot;
  auto free_dims = [](int rank, const Dims& batch, const Dims& contract) {
    Dims f;
    for (int i = 0; i < rank; ++i)
      if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
          std::find(contract.begin(), contract.end(), i) == contract.end())
        f.push_back(i);
    return f;
  };
  const Dims lf = free_dims(lt.rank(), d.lhs_batch, d.lhs_contracting);
  const Dims rf = free_dims(rt.rank(), d.rhs_batch, d.rhs_contracting);
  std::int64_t B = 1, M = 1, N = 1, K = 1;
  for (std::int64_t i : d.lhs_batch) B *= lt.dims[i];
  for (std::int64_t i : lf) M *= lt.dims[i];
  for (std::int64_t i : rf) N *= rt.dims[i];
  for (std::int64_t i : d.lhs_contracting) K *= lt.dims[i];
  Dims lp = d.lhs_batch, rp = d.rhs_batch;
  lp.insert(lp.end(), lf.begin(), lf.end());
  lp.insert(lp.end(), d.lhs_contracting.begin(), d.lhs_contracting.end());
  rp.insert(rp.end(), d.rhs_contracting.begin(), d.rhs_contracting.end());
  rp.insert(rp.end(), rf.begin(), rf.end());
  const std::int64_t on = ot.num_elements();

  const bool integer = !hlo::is_float(lt.dtype) || !hlo::is_float(rt.dtype);
  if (integer || lt.dtype == DType::kF64 || rt.dtype == DType::kF64 || ot.dtype == DType::kF64) {
    std::vector<double> a(static_cast<std::size_t>(lt.num_elements())),
        c(static_cast<std::size_t>(rt.num_elements()));
    permute_to(lt, lhs, lp, a.data());
    permute_to(rt, rhs, rp, c.data());
    std::vector<double> o(static_cast<std::size_t>(on), 0.0);
    if (integer) {
      for (std::int64_t bb = 0; bb < B; ++bb)
        for (std::int64_t i = 0; i < M; ++i)
          for (std::int64_t k = 0; k < K; ++k) {
            const double av = a[(bb * M + i) * K + k];
            for (std::int64_t j = 0; j < N; ++j)
              o[(bb * M + i) * N + j] += av * c[(bb * K + k) * N + j];
          }
    } else {
      for (std::int64_t bb = 0; bb < B; ++bb)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(M),
                    static_cast<blasint>(N), static_cast<blasint>(K), 1.0, a.data() + bb * M * K,
                    static_cast<blasint>(K), c.data() + bb * K * N, static_cast<blasint>(N), 0.0,
                    o.data() + bb * M * N, static_cast<blasint>(N));
    }
    const int es = hlo::dtype_size(ot.dtype);
    for (std::int64_t i = 0; i < on; ++i) hlo::store_double(ot.dtype, o[i], out + i * es);
    return;
  }
  // Float32 accumulation.
  float* o = ot.dtype == DType::kF32 ? reinterpret_cast<float*>(out) : nullptr;
  std::vector<float> otmp;
  if (!o) {
    otmp.resize(static_cast<std::size_t>(on));
    o = otmp.data();
  }
  // A result of another type than float32 is rounded from the float32 accumulators.
  auto store_result = [&] {
    if (otmp.empty()) return;
    const int es = hlo::dtype_size(ot.dtype);
    if (ot.dtype == DType::kBF16)
      for (std::int64_t i = 0; i < on; ++i)
        reinterpret_cast<std::uint16_t*>(out)[i] = hlo::f32_to_bf16(o[i]);
    else
      for (std::int64_t i = 0; i < on; ++i) hlo::store_double(ot.dtype, o[i], out + i * es);
  };
  // An operand stored as [batch, k, m] (lhs) or [batch, n, k] (rhs) is passed transposed
  // rather than copied: attention's q k^T and the backward's p^T dO are such.
  auto stored_transposed = [](const Dims& batch, const Dims& first, const Dims& second) {
    Dims order = batch;
    order.insert(order.end(), first.begin(), first.end());
    order.insert(order.end(), second.begin(), second.end());
    return is_identity(order);
  };
  MatmulShape shape;
  shape.batch = B;
  shape.m = M;
  shape.n = N;
  shape.k = K;
  shape.lhs_transposed = !is_identity(lp) && stored_transposed(d.lhs_batch, d.lhs_contracting, lf);
  shape.rhs_transposed = !is_identity(rp) && stored_transposed(d.rhs_batch, rf, d.rhs_contracting);
  // bf16 x bf16 runs on the CPU's bf16 kernels; any other mix is widened to float32.
  const bool bf16 = lt.dtype == DType::kBF16 && rt.dtype == DType::kBF16;
  shape.input = bf16 ? MatmulInput::kBF16 : MatmulInput::kF32;
  const DType input = bf16 ? DType::kBF16 : DType::kF32;
  std::vector<std::uint8_t> a, c;
  auto prepare = [&](const hlo::TensorType& t, const std::uint8_t* src, const Dims& perm,
                     bool transposed, std::vector<std::uint8_t>& buf) -> const void* {
    const bool in_place = transposed || is_identity(perm);
    if (in_place && t.dtype == input) return src;
    const auto n = static_cast<std::size_t>(t.num_elements());
    std::vector<float> f(n);
    if (in_place)
      widen(t, src, f.data());
    else
      permute_to(t, src, perm, f.data());
    if (input == DType::kF32) {
      buf.resize(n * sizeof(float));
      std::memcpy(buf.data(), f.data(), buf.size());
    } else {  // exact: the values came from bf16
      buf.resize(n * sizeof(std::uint16_t));
      auto* h = reinterpret_cast<std::uint16_t*>(buf.data());
      for (std::size_t i = 0; i < n; ++i) h[i] = hlo::f32_to_bf16(f[i]);
    }
    return buf.data();
  };
  // torch.mm's (no batch dims) and torch.bmm's float32 products as ATen computes them, where
  // the torch layer installed its sgemm: a permuted operand is made dense first, as a strided
  // one changes only where sgemm reads it. Dots no mm or bmm call made (an attention's over
  // 2^18 keys among them) keep oneDNN, whose blocked sums are as accurate as ATen's fused
  // kernels there; MKL's were a little less.
  if (op.sgemm && lt.dtype == DType::kF32 && rt.dtype == DType::kF32 && ot.dtype == DType::kF32 &&
      aten_matmul::installed()) {
    const auto* pa = static_cast<const float*>(prepare(lt, lhs, lp, shape.lhs_transposed, a));
    const auto* pc = static_cast<const float*>(prepare(rt, rhs, rp, shape.rhs_transposed, c));
    if (aten_matmul::matmul(!d.lhs_batch.empty(), B, M, N, K, pa, shape.lhs_transposed, pc,
                            shape.rhs_transposed, o))
      return;
  }
  // Operands of the input type whose groups of dims are each one stride apart (a permuted
  // batch, as in attention's p x v with v stored [b, s, h, d]) are read in place through
  // strides, when oneDNN has a fast kernel for them.
  const bool permuted =
      (!is_identity(lp) && !shape.lhs_transposed) || (!is_identity(rp) && !shape.rhs_transposed);
  if (permuted && on > 0 && K > 0 && lt.dtype == input && rt.dtype == input &&
      d.lhs_batch.size() + 2 <= kMaxMatmulRank) {
    MatmulShape strided = shape;
    for (std::int64_t i : d.lhs_batch) strided.batch_dims.push_back(lt.dims[i]);
    strided.lhs_strides = in_place_strides(lt, d.lhs_batch, lf, d.lhs_contracting);
    strided.rhs_strides = in_place_strides(rt, d.rhs_batch, d.rhs_contracting, rf);
    if (strided.batch_dims.empty()) strided.batch_dims.push_back(1);
    if (!strided.lhs_strides.empty() && !strided.rhs_strides.empty()) {
      if (d.lhs_batch.empty()) {
        strided.lhs_strides.insert(strided.lhs_strides.begin(),
                                   std::max<std::int64_t>(lt.num_elements(), 1));
        strided.rhs_strides.insert(strided.rhs_strides.begin(),
                                   std::max<std::int64_t>(rt.num_elements(), 1));
      }
      if (host_matmul_strides_fast(strided)) {
        host_matmul(strided, lhs, rhs, o);
        store_result();
        return;
      }
    }
  }
  const void* pa = prepare(lt, lhs, lp, shape.lhs_transposed, a);
  const void* pc = prepare(rt, rhs, rp, shape.rhs_transposed, c);
  host_matmul(shape, pa, pc, o);
  store_result();
}

}  // namespace vtrn::runtime::kernels
