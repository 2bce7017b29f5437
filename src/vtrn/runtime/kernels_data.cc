// Data-movement kernels (transpose, slice, pad, concatenate, dynamic slices, gather, scatter,
// sort, iota, rng_bit_generator): dtype-agnostic copies of elements of a given byte size.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "vtrn/runtime/executor.h"
#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/strided_copy.h"
#include "vtrn/runtime/thread_pool.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using hlo::OpKind;
using hlo::TensorType;
using Dims = std::vector<std::int64_t>;

Dims strides_of(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

namespace {

std::int64_t read_index(DType d, const std::uint8_t* p, std::int64_t i) {
  const std::uint8_t* q = p + i * hlo::dtype_size(d);
  switch (d) {
    case DType::kI8:
      return static_cast<std::int8_t>(*q);
    case DType::kU8:
      return *q;
    case DType::kI16: {
      std::int16_t v;
      std::memcpy(&v, q, 2);
      return v;
    }
    case DType::kU16: {
      std::uint16_t v;
      std::memcpy(&v, q, 2);
      return v;
    }
    case DType::kI32: {
      std::int32_t v;
      std::memcpy(&v, q, 4);
      return v;
    }
    case DType::kU32: {
      std::uint32_t v;
      std::memcpy(&v, q, 4);
      return v;
    }
    default: {
      std::int64_t v;
      std::memcpy(&v, q, 8);
      return v;
    }
  }
}

// Gathers whole slices along one dim (index_select, embedding lookup): out[pre, j, post] =
// x[pre, clamp(idx[j]), post], copied a row at a time. Returns false for any other pattern.
bool gather_rows(const hlo::Block& b, const hlo::Op& op, const std::uint8_t* x,
                 const std::uint8_t* ind, std::uint8_t* out) {
  const TensorType& xt = b.type(op.operands[0]);
  const TensorType& it = b.type(op.operands[1]);
  const TensorType& ot = b.type(op.results[0]);
  const hlo::GatherDims& g = op.gather;
  if (it.rank() != 2 || it.dims[1] != 1 || g.index_vector_dim != 1 ||
      g.start_index_map.size() != 1 || g.collapsed_slice_dims != g.start_index_map ||
      ot.rank() != xt.rank())
    return false;
  const std::int64_t d = g.start_index_map[0];
  for (int k = 0; k < xt.rank(); ++k)
    if (op.dims[k] != (k == d ? 1 : xt.dims[k])) return false;
  Dims want;
  for (int k = 0; k < ot.rank(); ++k)
    if (k != d) want.push_back(k);
  if (g.offset_dims != want) return false;
  const std::int64_t n = it.dims[0];
  std::int64_t outer = 1, inner = hlo::dtype_size(xt.dtype);
  for (int k = 0; k < d; ++k) outer *= xt.dims[k];
  for (int k = static_cast<int>(d) + 1; k < xt.rank(); ++k) inner *= xt.dims[k];
  const std::int64_t rows = xt.dims[d];
  for (std::int64_t pre = 0; pre < outer; ++pre)
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t r = std::clamp<std::int64_t>(read_index(it.dtype, ind, j), 0, rows - 1);
      std::memcpy(out + (pre * n + j) * inner, x + (pre * rows + r) * inner,
                  static_cast<std::size_t>(inner));
    }
  return true;
}

void gather(const hlo::Block& b, const hlo::Op& op, const std::uint8_t* x, const std::uint8_t* ind,
            std::uint8_t* out) {
  if (gather_rows(b, op, x, ind, out)) return;
  const TensorType& xt = b.type(op.operands[0]);
  const TensorType& it = b.type(op.operands[1]);
  const TensorType& ot = b.type(op.results[0]);
  const hlo::GatherDims& g = op.gather;
  const int es = hlo::dtype_size(xt.dtype);
  const Dims xs = strides_of(xt.dims), is = strides_of(it.dims);
  const int orank = ot.rank();
  std::vector<bool> is_offset(static_cast<std::size_t>(orank), false);
  for (std::int64_t d : g.offset_dims) is_offset[d] = true;
  // Operand dims that receive offset dims, in order.
  Dims window_operand_dims;
  for (int d = 0; d < xt.rank(); ++d)
    if (std::find(g.collapsed_slice_dims.begin(), g.collapsed_slice_dims.end(), d) ==
        g.collapsed_slice_dims.end())
      window_operand_dims.push_back(d);
  const std::int64_t n = ot.num_elements();
  Dims idx(static_cast<std::size_t>(orank), 0), start(static_cast<std::size_t>(xt.rank()));
  for (std::int64_t o = 0; o < n; ++o) {
    // Batch index -> position in the indices tensor (index_vector_dim inserted).
    Dims bidx;
    Dims off;
    for (int d = 0; d < orank; ++d) (is_offset[d] ? off : bidx).push_back(idx[d]);
    std::fill(start.begin(), start.end(), 0);
    for (std::size_t k = 0; k < g.start_index_map.size(); ++k) {
      std::int64_t pos = 0;
      std::size_t bi = 0;
      for (int d = 0; d < it.rank(); ++d)
        pos += (d == g.index_vector_dim ? static_cast<std::int64_t>(k) : bidx[bi++]) * is[d];
      start[g.start_index_map[k]] = read_index(it.dtype, ind, pos);
    }
    std::int64_t src = 0;
    for (int d = 0; d < xt.rank(); ++d) {
      const std::int64_t s = std::clamp<std::int64_t>(start[d], 0, xt.dims[d] - op.dims[d]);
      src += s * xs[d];
    }
    for (std::size_t w = 0; w < off.size(); ++w) src += off[w] * xs[window_operand_dims[w]];
    std::memcpy(out + o * es, x + src * es, static_cast<std::size_t>(es));
    for (int d = orank - 1; d >= 0; --d) {
      if (++idx[d] < ot.dims[d]) break;
      idx[d] = 0;
    }
  }
}

// Adds whole rows into a [rows, width] operand (embedding backward): out[idx[j], :] += upd[j, :]
// in update order, each sum rounded to the operand's type as the generic loop does. Returns
// false for any other pattern.
bool scatter_add_rows(const hlo::Block& b, const hlo::Op& op, const std::uint8_t* ind,
                      const std::uint8_t* upd, std::uint8_t* out) {
  const TensorType& xt = b.type(op.operands[0]);
  const TensorType& it = b.type(op.operands[1]);
  const TensorType& ut = b.type(op.operands[2]);
  const hlo::ScatterDims& s = op.scatter;
  if (xt.rank() != 2 || it.rank() != 2 || it.dims[1] != 1 || ut.rank() != 2 ||
      ut.dims[1] != xt.dims[1] || s.index_vector_dim != 1 || s.update_window_dims != Dims{1} ||
      s.inserted_window_dims != Dims{0} || s.scatter_dims_to_operand_dims != Dims{0} ||
      ut.dims[0] != it.dims[0])
    return false;
  const DType dt = xt.dtype;
  if (dt != DType::kF32 && dt != DType::kBF16) return false;
  const std::int64_t n = ut.dims[0], width = xt.dims[1], rows = xt.dims[0];
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int64_t r = read_index(it.dtype, ind, j);
    if (r < 0 || r >= rows) continue;
    if (dt == DType::kF32) {
      float* p = reinterpret_cast<float*>(out) + r * width;
      const float* q = reinterpret_cast<const float*>(upd) + j * width;
      for (std::int64_t k = 0; k < width; ++k) p[k] += q[k];
    } else {
      std::uint16_t* p = reinterpret_cast<std::uint16_t*>(out) + r * width;
      const std::uint16_t* q = reinterpret_cast<const std::uint16_t*>(upd) + j * width;
      for (std::int64_t k = 0; k < width; ++k)
        p[k] = hlo::f32_to_bf16(hlo::bf16_to_f32(p[k]) + hlo::bf16_to_f32(q[k]));
    }
  }
  return true;
}

// *p = kind(*p, *q) for a multiplying, maximum or minimum scatter, rounded to |d| once (the
// product of two floats of |d| is exact in double). Integers wrap; maximum and minimum
// propagate NaN, and over pred they are or and and.
void combine_element(hlo::ScatterKind kind, DType d, std::uint8_t* p, const std::uint8_t* q) {
  if (hlo::is_float(d)) {
    const double a = hlo::load_double(d, p), c = hlo::load_double(d, q);
    double r;
    if (kind == hlo::ScatterKind::kMul)
      r = a * c;
    else if (std::isnan(a) || std::isnan(c))
      r = std::isnan(a) ? a : c;
    else
      r = kind == hlo::ScatterKind::kMax ? std::max(a, c) : std::min(a, c);
    hlo::store_double(d, r, p);
    return;
  }
  if (d == DType::kPred) {
    *p = static_cast<std::uint8_t>(kind == hlo::ScatterKind::kMax ? (*p | *q) : (*p & *q));
    return;
  }
  const std::int64_t a = read_index(d, p, 0), c = read_index(d, q, 0);
  std::int64_t r;
  if (kind == hlo::ScatterKind::kMul)
    r = static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(c));
  else if (d == DType::kU64)  // read_index gives the bits; compare them unsigned
    r = static_cast<std::int64_t>(
        kind == hlo::ScatterKind::kMax
            ? std::max(static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(c))
            : std::min(static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(c)));
  else
    r = kind == hlo::ScatterKind::kMax ? std::max(a, c) : std::min(a, c);
  std::memcpy(p, &r, static_cast<std::size_t>(hlo::dtype_size(d)));  // little-endian
}

// The op of |b| that gives value |v|; nullptr for an argument.
const hlo::Op* producer(const hlo::Block& b, int v) {
  for (const hlo::Op& o : b.ops)
    if (std::find(o.results.begin(), o.results.end(), v) != o.results.end()) return &o;
  return nullptr;
}

// |n| elements of |es| bytes, each a copy of |value|.
void fill_with(std::uint8_t* out, const std::uint8_t* value, int es, std::int64_t n) {
  if (std::all_of(value, value + es, [](std::uint8_t c) { return c == 0; })) {
    std::memset(out, 0, static_cast<std::size_t>(n * es));
    return;
  }
  for (std::int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * es, value, static_cast<std::size_t>(es));
}

void scatter(const hlo::Block& b, const hlo::Op& op, const std::uint8_t* x, const std::uint8_t* ind,
             const std::uint8_t* upd, std::uint8_t* out) {
  const TensorType& xt = b.type(op.operands[0]);
  const TensorType& it = b.type(op.operands[1]);
  const TensorType& ut = b.type(op.operands[2]);
  const hlo::ScatterDims& s = op.scatter;
  const int es = hlo::dtype_size(xt.dtype);
  if (out != x) {
    // Into a splat (nll_loss_backward's zeros): the result filled with its value, not copied
    // from the expanded constant (a read of as many bytes again, from memory).
    const hlo::Op* def = producer(b, op.operands[0]);
    if (def != nullptr && def->kind == OpKind::kConstant && def->literal.splat)
      fill_with(out, def->literal.data.data(), es, xt.num_elements());
    else
      std::memcpy(out, x, static_cast<std::size_t>(xt.byte_size()));
  }
  const hlo::ScatterKind kind = hlo::match_scatter_region(*op.regions[0]);
  const bool add = kind == hlo::ScatterKind::kAdd;
  const bool other = kind == hlo::ScatterKind::kMul || kind == hlo::ScatterKind::kMax ||
                     kind == hlo::ScatterKind::kMin;
  if (add && scatter_add_rows(b, op, ind, upd, out)) return;
  const Dims xs = strides_of(xt.dims), is = strides_of(it.dims);
  std::vector<bool> is_window(static_cast<std::size_t>(ut.rank()), false);
  for (std::int64_t d : s.update_window_dims) is_window[d] = true;
  Dims window_operand_dims;
  for (int d = 0; d < xt.rank(); ++d)
    if (std::find(s.inserted_window_dims.begin(), s.inserted_window_dims.end(), d) ==
        s.inserted_window_dims.end())
      window_operand_dims.push_back(d);
  const std::int64_t n = ut.num_elements();
  Dims idx(static_cast<std::size_t>(ut.rank()), 0), full(static_cast<std::size_t>(xt.rank()));
  for (std::int64_t u = 0; u < n; ++u) {
    Dims sidx, widx;
    for (int d = 0; d < ut.rank(); ++d) (is_window[d] ? widx : sidx).push_back(idx[d]);
    std::fill(full.begin(), full.end(), 0);
    for (std::size_t k = 0; k < s.scatter_dims_to_operand_dims.size(); ++k) {
      std::int64_t pos = 0;
      std::size_t si = 0;
      for (int d = 0; d < it.rank(); ++d)
        pos += (d == s.index_vector_dim ? static_cast<std::int64_t>(k) : sidx[si++]) * is[d];
      full[s.scatter_dims_to_operand_dims[k]] = read_index(it.dtype, ind, pos);
    }
    for (std::size_t w = 0; w < widx.size(); ++w) full[window_operand_dims[w]] += widx[w];
    bool inside = true;
    std::int64_t dst = 0;
    for (int d = 0; d < xt.rank(); ++d) {
      inside = inside && full[d] >= 0 && full[d] < xt.dims[d];
      dst += full[d] * xs[d];
    }
    if (inside) {
      std::uint8_t* p = out + dst * es;
      const std::uint8_t* q = upd + u * es;
      if (other) {
        combine_element(kind, xt.dtype, p, q);
      } else if (!add) {
        std::memcpy(p, q, static_cast<std::size_t>(es));
      } else if (xt.dtype == DType::kF32 || xt.dtype == DType::kBF16 || xt.dtype == DType::kF16) {
        const float v = static_cast<float>(hlo::load_double(xt.dtype, p)) +
                        static_cast<float>(hlo::load_double(xt.dtype, q));
        hlo::store_double(xt.dtype, v, p);
      } else if (xt.dtype == DType::kF64) {
        hlo::store_double(xt.dtype, hlo::load_double(xt.dtype, p) + hlo::load_double(xt.dtype, q),
                          p);
      } else if (hlo::is_complex(xt.dtype)) {
        float a[2], c[2];
        std::memcpy(a, p, 8);
        std::memcpy(c, q, 8);
        a[0] += c[0];
        a[1] += c[1];
        std::memcpy(p, a, 8);
      } else {
        std::uint64_t a = 0, c = 0;
        std::memcpy(&a, p, static_cast<std::size_t>(es));
        std::memcpy(&c, q, static_cast<std::size_t>(es));
        if (xt.dtype == DType::kPred)
          a = (a | c) != 0;
        else
          a += c;
        std::memcpy(p, &a, static_cast<std::size_t>(es));
      }
    }
    for (int d = ut.rank() - 1; d >= 0; --d) {
      if (++idx[d] < ut.dims[d]) break;
      idx[d] = 0;
    }
  }
}

// A sort key: floats order NaN last ascending and first descending, integers exactly.
struct Key {
  double f;
  std::int64_t i;
  bool nan;
};

void sort(const hlo::Block& b, const hlo::Op& op, const std::vector<const std::uint8_t*>& in,
          const std::vector<std::uint8_t*>& out) {
  int key = 0;
  bool desc = false;
  hlo::match_sort_region(*op.regions[0], &key, &desc);
  const TensorType& t = b.type(op.operands[0]);
  const DType kd = b.type(op.operands[key]).dtype;
  const bool fl = hlo::is_float(kd);
  const Dims st = strides_of(t.dims);
  const std::int64_t len = t.dims[op.dimension], stride = st[op.dimension];
  const std::int64_t n = t.num_elements();
  const std::int64_t outer = len == 0 ? 0 : n / len;
  std::vector<std::int64_t> perm(static_cast<std::size_t>(len));
  std::vector<Key> keys(static_cast<std::size_t>(len));
  for (std::int64_t line = 0; line < outer; ++line) {
    // Base offset of this 1-D line: enumerate all indices with the sort dim fixed at 0.
    const std::int64_t hi = line / stride, lo = line % stride;
    const std::int64_t base = hi * len * stride + lo;
    for (std::int64_t j = 0; j < len; ++j) {
      const std::int64_t e = base + j * stride;
      Key& k = keys[j];
      if (fl) {
        k.f = hlo::load_double(kd, in[key] + e * hlo::dtype_size(kd));
        k.nan = std::isnan(k.f);
      } else {
        k.i = kd == DType::kPred ? in[key][e]
                                 : read_index(kd == DType::kU64 ? DType::kI64 : kd, in[key], e);
        k.nan = false;
      }
    }
    std::iota(perm.begin(), perm.end(), 0);
    auto less = [&](std::int64_t x, std::int64_t y) {
      const Key &a = keys[x], &c = keys[y];
      if (fl) {
        // NaN is the largest key: last ascending, first descending.
        if (a.nan || c.nan) return desc ? a.nan && !c.nan : !a.nan && c.nan;
        return desc ? a.f > c.f : a.f < c.f;
      }
      if (kd == DType::kU64)
        return desc ? static_cast<std::uint64_t>(a.i) > static_cast<std::uint64_t>(c.i)
                    : static_cast<std::uint64_t>(a.i) < static_cast<std::uint64_t>(c.i);
      return desc ? a.i > c.i : a.i < c.i;
    };
    // An unstable sort orders equal keys as ATen's CPU sort does (where they land is observable:
    // the indices, and whatever they route, such as an MoE's tokens): std::sort (introsort) of
    // each line with the same comparison, whose moves do not depend on what the keys carry.
    // ATen hands a 1-D ascending integer sort of GRAIN_SIZE (32768) elements or more to
    // fbgemm's radix sort, which is stable.
    const bool radix = t.rank() == 1 && !fl && kd != DType::kPred && !desc && len >= 32768;
    if (op.is_stable || radix)
      std::stable_sort(perm.begin(), perm.end(), less);
    else
      std::sort(perm.begin(), perm.end(), less);
    for (std::size_t o = 0; o < in.size(); ++o) {
      const int es = hlo::dtype_size(b.type(op.operands[o]).dtype);
      std::vector<std::uint8_t> tmp(static_cast<std::size_t>(len * es));
      for (std::int64_t j = 0; j < len; ++j)
        std::memcpy(tmp.data() + j * es, in[o] + (base + perm[j] * stride) * es,
                    static_cast<std::size_t>(es));
      for (std::int64_t j = 0; j < len; ++j)
        std::memcpy(out[o] + (base + j * stride) * es, tmp.data() + j * es,
                    static_cast<std::size_t>(es));
    }
  }
}

}  // namespace

void philox4x32_10(const std::uint32_t ctr[4], const std::uint32_t key_in[2],
                   std::uint32_t out[4]) {
  std::uint32_t k0 = key_in[0], k1 = key_in[1];
  std::uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t p0 = 0xD2511F53ull * c[0], p1 = 0xCD9E8D57ull * c[2];
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k0;
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = static_cast<std::uint32_t>(p1);
    c[2] = n2;
    c[3] = static_cast<std::uint32_t>(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  std::memcpy(out, c, 16);
}

namespace {

// o[2 i] = a[i], o[2 i + 1] = b[i] for i < n, in ranges over |threads|.
void interleave_pairs(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* o,
                      std::int64_t n, int threads) {
  auto run = [&](std::int64_t lo, std::int64_t hi) {
    const std::uint32_t* __restrict x = a;
    const std::uint32_t* __restrict y = b;
    std::uint32_t* __restrict z = o;
    for (std::int64_t i = lo; i < hi; ++i) {
      z[2 * i] = x[i];
      z[2 * i + 1] = y[i];
    }
  };
  constexpr std::int64_t kParallelMin = 1 << 16;
  if (threads <= 1 || n < kParallelMin) return run(0, n);
  parallel_ranges(n, kParallelMin / 4, threads, run);
}

void rng(const hlo::Block& b, const hlo::Op& op, const std::uint8_t* state, std::uint8_t* new_state,
         std::uint8_t* out) {
  const TensorType& st = b.type(op.operands[0]);
  const TensorType& ot = b.type(op.results[1]);
  const std::size_t sbytes = static_cast<std::size_t>(st.byte_size());
  std::vector<std::uint8_t> s(std::max<std::size_t>(sbytes, 24), 0);
  std::memcpy(s.data(), state, sbytes);
  // XLA's Philox: the key is the state's first 64 bits, the 128-bit counter its next 128 (the
  // high half 0 for a 2 x u64 state); block j is Philox of counter + j, and the new state's
  // counter is advanced by the number of blocks.
  std::uint32_t key[2];
  std::uint64_t lo = 0, hi = 0;
  std::memcpy(key, s.data(), 8);
  std::memcpy(&lo, s.data() + 8, 8);
  std::memcpy(&hi, s.data() + 16, 8);
  const std::size_t bytes = static_cast<std::size_t>(ot.byte_size());
  std::uint64_t blocks = 0;
  for (std::size_t o = 0; o < bytes; o += 16, ++blocks) {
    const std::uint64_t c_lo = lo + blocks;
    const std::uint64_t c_hi = hi + (c_lo < lo ? 1 : 0);
    std::uint32_t r[4];
    const std::uint32_t c[4] = {
        static_cast<std::uint32_t>(c_lo), static_cast<std::uint32_t>(c_lo >> 32),
        static_cast<std::uint32_t>(c_hi), static_cast<std::uint32_t>(c_hi >> 32)};
    philox4x32_10(c, key, r);
    std::memcpy(out + o, r, std::min<std::size_t>(16, bytes - o));
  }
  const std::uint64_t n_lo = lo + blocks;
  const std::uint64_t n_hi = hi + (n_lo < lo ? 1 : 0);
  std::memcpy(s.data() + 8, &n_lo, 8);
  std::memcpy(s.data() + 16, &n_hi, 8);
  std::memcpy(new_state, s.data(), sbytes);
}

}  // namespace

void run_op(const hlo::Block& b, const hlo::Op& op, const std::vector<const std::uint8_t*>& in,
            const std::vector<std::uint8_t*>& out, int threads) {
  const TensorType& ot = b.type(op.results[0]);
  const int es = hlo::dtype_size(ot.dtype);
  switch (op.kind) {
    case OpKind::kTranspose: {
      const Dims src = strides_of(b.type(op.operands[0]).dims);
      Dims s;
      for (std::int64_t p : op.dims) s.push_back(src[p]);
      strided_copy(out[0], {0, strides_of(ot.dims)}, in[0], {0, s}, ot.dims, es, threads);
      return;
    }
    case OpKind::kBroadcastInDim: {
      const TensorType& xt = b.type(op.operands[0]);
      const Dims src = strides_of(xt.dims);
      Dims s(ot.dims.size(), 0);
      for (std::size_t i = 0; i < op.dims.size(); ++i)
        if (xt.dims[i] != 1) s[op.dims[i]] = src[i];
      strided_copy(out[0], {0, strides_of(ot.dims)}, in[0], {0, s}, ot.dims, es, threads);
      return;
    }
    case OpKind::kSlice: {
      const Dims src = strides_of(b.type(op.operands[0]).dims);
      Dims s;
      std::int64_t base = 0;
      for (std::size_t d = 0; d < src.size(); ++d) {
        s.push_back(src[d] * op.strides[d]);
        base += op.start_indices[d] * src[d];
      }
      strided_copy(out[0], {0, strides_of(ot.dims)}, in[0], {base, s}, ot.dims, es, threads);
      return;
    }
    case OpKind::kReverse: {
      const Dims src = strides_of(ot.dims);
      Dims s = src;
      std::int64_t base = 0;
      for (std::int64_t d : op.dims) {
        s[d] = -src[d];
        base += (ot.dims[d] - 1) * src[d];
      }
      if (ot.num_elements() > 0)
        strided_copy(out[0], {0, src}, in[0], {base, s}, ot.dims, es, threads);
      return;
    }
    case OpKind::kDynamicSlice: {
      const TensorType& xt = b.type(op.operands[0]);
      const Dims src = strides_of(xt.dims);
      std::int64_t base = 0;
      for (int d = 0; d < xt.rank(); ++d) {
        const std::int64_t st = std::clamp<std::int64_t>(
            read_index(b.type(op.operands[1 + d]).dtype, in[1 + d], 0), 0, xt.dims[d] - op.dims[d]);
        base += st * src[d];
      }
      strided_copy(out[0], {0, strides_of(ot.dims)}, in[0], {base, src}, ot.dims, es, threads);
      return;
    }
    case OpKind::kDynamicUpdateSlice: {
      const TensorType& ut = b.type(op.operands[1]);
      if (out[0] != in[0]) std::memcpy(out[0], in[0], static_cast<std::size_t>(ot.byte_size()));
      const Dims dst = strides_of(ot.dims);
      std::int64_t base = 0;
      for (int d = 0; d < ot.rank(); ++d) {
        const std::int64_t st = std::clamp<std::int64_t>(
            read_index(b.type(op.operands[2 + d]).dtype, in[2 + d], 0), 0, ot.dims[d] - ut.dims[d]);
        base += st * dst[d];
      }
      strided_copy(out[0], {base, dst}, in[1], {0, strides_of(ut.dims)}, ut.dims, es, threads);
      return;
    }
    case OpKind::kConcatenate: {
      const std::int64_t dim = op.dimension;
      std::int64_t outer = 1;
      for (std::int64_t d = 0; d < dim; ++d) outer *= ot.dims[d];
      std::int64_t inner = 1;
      for (int d = static_cast<int>(dim) + 1; d < ot.rank(); ++d) inner *= ot.dims[d];
      std::int64_t at = 0;
      const std::int64_t row = ot.dims[dim] * inner;
      // torch.stack(..., dim=-1) of two float32 tensors (a rotary embedding's halves): one
      // element of each per row, interleaved in one pass instead of one strided pass each.
      if (in.size() == 2 && row == 2 && es == 4) {
        interleave_pairs(reinterpret_cast<const std::uint32_t*>(in[0]),
                         reinterpret_cast<const std::uint32_t*>(in[1]),
                         reinterpret_cast<std::uint32_t*>(out[0]), outer, threads);
        return;
      }
      for (std::size_t k = 0; k < in.size(); ++k) {
        const std::int64_t chunk = b.type(op.operands[k]).dims[dim] * inner;
        strided_copy(out[0], {at, {row, 1}}, in[k], {0, {chunk, 1}}, {outer, chunk}, es, threads);
        at += chunk;
      }
      return;
    }
    case OpKind::kPad: {
      // The padding value everywhere, then the operand's elements that land inside the
      // result (negative padding drops some) written at their strided positions.
      const TensorType& xt = b.type(op.operands[0]);
      fill_elements(out[0], in[1], ot.num_elements(), es);
      const Dims dst = strides_of(ot.dims), src = strides_of(xt.dims);
      StridedView into{0, {}}, from{0, src};
      Dims shape;
      for (int d = 0; d < xt.rank(); ++d) {
        const std::int64_t step = op.interior_padding[d] + 1, low = op.edge_padding_low[d];
        // Operand indices i with 0 <= low + i * step < ot.dims[d].
        const std::int64_t first = low >= 0 ? 0 : (-low + step - 1) / step;
        const std::int64_t last = std::min(xt.dims[d] - 1, (ot.dims[d] - 1 - low) / step);
        if (ot.dims[d] - 1 - low < 0 || last < first) return;
        shape.push_back(last - first + 1);
        into.strides.push_back(dst[d] * step);
        into.base += (low + first * step) * dst[d];
        from.base += first * src[d];
      }
      strided_copy(out[0], into, in[0], from, shape, es, threads);
      return;
    }
    case OpKind::kIota: {
      // The values 0 .. len-1 once in the result's dtype, then broadcast over the other dims.
      const std::int64_t len = ot.dims[op.dimension];
      std::vector<std::uint8_t> row(static_cast<std::size_t>(len * es));
      for (std::int64_t i = 0; i < len; ++i)
        hlo::store_double(ot.dtype, static_cast<double>(i), row.data() + i * es);
      Dims from(ot.dims.size(), 0);
      from[op.dimension] = 1;
      strided_copy(out[0], {0, strides_of(ot.dims)}, row.data(), {0, from}, ot.dims, es, threads);
      return;
    }
    case OpKind::kGather:
      gather(b, op, in[0], in[1], out[0]);
      return;
    case OpKind::kScatter:
      scatter(b, op, in[0], in[1], in[2], out[0]);
      return;
    case OpKind::kSort:
      sort(b, op, in, out);
      return;
    case OpKind::kRngBitGenerator:
      rng(b, op, in[0], out[0], out[1]);
      return;
    case OpKind::kBitcastConvert:
      std::memcpy(out[0], in[0], static_cast<std::size_t>(ot.byte_size()));
      return;
    case OpKind::kDotGeneral:
      dot_general(b, op, in[0], in[1], out[0]);
      return;
    case OpKind::kConvolution:
      convolution(b, op, in[0], in[1], out[0]);
      return;
    case OpKind::kReduce:
      region_reduce(b, op, in, out);
      return;
    default:
      break;
  }
  if (hlo::is_complex(ot.dtype) ||
      (!op.operands.empty() && hlo::is_complex(b.type(op.operands[0]).dtype)))
    throw ExecError("stablehlo." + std::string(hlo::op_name(op.kind)) + " on complex64 (" +
                    ot.str() +
                    ") is not supported by the vtrn executor: complex64 tensors can be moved "
                    "(reshape, transpose, slice, "
                    "concatenate, gather, ...) but not computed on");
  throw ExecError("the vtrn executor has no kernel for stablehlo." +
                  std::string(hlo::op_name(op.kind)) + " on " + ot.str());
}

}  // namespace vtrn::runtime::kernels
