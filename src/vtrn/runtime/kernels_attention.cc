#include "vtrn/runtime/kernels_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "vtrn/compiler/fused_attention.h"
#include "vtrn/runtime/aten_attention.h"
#include "vtrn/runtime/host_matmul.h"
#include "vtrn/runtime/isa_clones.h"
#include "vtrn/runtime/thread_pool.h"
#include "vtrn/runtime/vecmath.h"

namespace vtrn::runtime::kernels {
namespace {

// The heads that share one key/value head are adjacent (query head h reads kv head
// h / groups), so each (batch, kv head) pair is one block: its groups * q_len query rows are
// contiguous and all read the same keys. A block's products are then single matrix products,
// and all blocks one batched product.
struct Dims {
  std::int64_t batch, heads, kv_heads, q_len, kv_len, d;
  bool causal;
  double scale;
  std::int64_t blocks() const { return batch * kv_heads; }
  std::int64_t rows() const { return heads / kv_heads * q_len; }  // query rows per block
};

Dims dims_of(const CustomCallArgs& a, std::size_t query, const char* target) {
  const auto config = compiler::parse_flash_attention_config(a.backend_config);
  if (!config)
    throw ExecError(std::string("custom_call @") + target + " has a malformed backend_config \"" +
                    a.backend_config + "\"");
  const hlo::TensorType& q = a.input_types[query];
  const hlo::TensorType& k = a.input_types[query + 1];
  return Dims{q.dims[0], q.dims[1], k.dims[1],      q.dims[2],
              k.dims[2], q.dims[3], config->causal, config->scale};
}

// The whole tensor as float32: the input itself when it is float32, else a widened copy.
const float* as_f32(const hlo::TensorType& type, const void* src, std::vector<float>& copy) {
  if (type.dtype == hlo::DType::kF32) return static_cast<const float*>(src);
  const std::int64_t n = type.num_elements();
  const int es = hlo::dtype_size(type.dtype);
  const auto* p = static_cast<const std::uint8_t*>(src);
  copy.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    copy[i] = static_cast<float>(hlo::load_double(type.dtype, p + i * es));
  return copy.data();
}

// Where a float32 result is computed: the output itself when it is float32, else |scratch|;
// store() then rounds the scratch into the output.
class F32Out {
 public:
  F32Out(const hlo::TensorType& type, void* dst, bool zeroed = false) : type_(type), dst_(dst) {
    if (type.dtype != hlo::DType::kF32)
      scratch_.assign(static_cast<std::size_t>(type.num_elements()), 0.0f);
    else if (zeroed)
      std::fill_n(static_cast<float*>(dst), type.num_elements(), 0.0f);
  }
  float* data() {
    return type_.dtype == hlo::DType::kF32 ? static_cast<float*>(dst_) : scratch_.data();
  }
  void store() const {
    if (type_.dtype == hlo::DType::kF32) return;
    const int es = hlo::dtype_size(type_.dtype);
    auto* p = static_cast<std::uint8_t*>(dst_);
    for (std::size_t i = 0; i < scratch_.size(); ++i)
      hlo::store_double(type_.dtype, scratch_[i], p + i * es);
  }

 private:
  const hlo::TensorType& type_;
  void* dst_;
  std::vector<float> scratch_;
};

// attention_forward's saved result [B, H, L, S + c] (compiler/attention_through_memory.h):
// each row's S probabilities, computed in float32 (in place for a float32 result, else in a
// scratch rounded by store()), then the float32 bits of the row's logsumexp.
class SavedRows {
 public:
  SavedRows(const hlo::TensorType& type, void* dst, std::int64_t len, bool probabilities)
      : dtype_(type.dtype),
        es_(hlo::dtype_size(type.dtype)),
        len_(len),
        stride_(len + 4 / es_),
        dst_(static_cast<std::uint8_t*>(dst)) {
    if (dtype_ != hlo::DType::kF32 && probabilities)
      scratch_.assign(static_cast<std::size_t>(type.num_elements() / stride_ * len), 0.0f);
  }
  // Rows [0, lse.size()) without their probabilities: NaN in their place (so that nothing can
  // take them for probabilities), then each row's logsumexp.
  void store_logsumexp_only(const std::vector<float>& lse) {
    std::uint8_t nan[sizeof(float)];
    hlo::store_double(dtype_, std::numeric_limits<double>::quiet_NaN(), nan);
    for (std::size_t r = 0; r < lse.size(); ++r) {
      std::uint8_t* p = dst_ + static_cast<std::int64_t>(r) * stride_ * es_;
      if (dtype_ == hlo::DType::kF32)
        std::fill_n(reinterpret_cast<float*>(p), len_, std::numeric_limits<float>::quiet_NaN());
      else
        for (std::int64_t j = 0; j < len_; ++j) std::memcpy(p + j * es_, nan, es_);
      set_logsumexp(static_cast<std::int64_t>(r), lse[r]);
    }
  }
  float* row(std::int64_t r) {
    return dtype_ == hlo::DType::kF32 ? reinterpret_cast<float*>(dst_) + r * stride_
                                      : scratch_.data() + r * len_;
  }
  void set_logsumexp(std::int64_t r, float lse) {
    std::memcpy(dst_ + (r * stride_ + len_) * es_, &lse, sizeof lse);
  }
  void store() const {
    if (dtype_ == hlo::DType::kF32) return;
    for (std::size_t i = 0; i < scratch_.size(); ++i) {
      const auto r = static_cast<std::int64_t>(i) / len_, j = static_cast<std::int64_t>(i) % len_;
      hlo::store_double(dtype_, scratch_[i], dst_ + (r * stride_ + j) * es_);
    }
  }

 private:
  hlo::DType dtype_;
  int es_;
  std::int64_t len_, stride_;
  std::uint8_t* dst_;
  std::vector<float> scratch_;
};

// The probabilities of a saved result (SavedRows' layout) as float32 [rows, len].
const float* saved_probabilities(const hlo::TensorType& type, const void* src, std::int64_t len,
                                 std::vector<float>& probabilities) {
  const int es = hlo::dtype_size(type.dtype);
  const std::int64_t stride = len + 4 / es, rows = type.num_elements() / stride;
  const auto* p = static_cast<const std::uint8_t*>(src);
  probabilities.resize(static_cast<std::size_t>(rows * len));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < len; ++j)
      probabilities[r * len + j] =
          static_cast<float>(hlo::load_double(type.dtype, p + (r * stride + j) * es));
  return probabilities.data();
}

// Each row's logsumexp of a saved result (SavedRows' layout), [rows].
void saved_logsumexp(const hlo::TensorType& type, const void* src, std::int64_t len,
                     std::vector<float>& lse) {
  const int es = hlo::dtype_size(type.dtype);
  const std::int64_t stride = len + 4 / es, rows = type.num_elements() / stride;
  const auto* p = static_cast<const std::uint8_t*>(src);
  lse.resize(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(&lse[static_cast<std::size_t>(r)], p + (r * stride + len) * es, sizeof(float));
}

// The scores of one tile: |nb| whole blocks from block |b0|, or rows [r0, r0 + m) of block b0
// (nb == 1) when a block's scores alone exceed the tile budget.
struct Tile {
  std::int64_t b0, nb, r0, m;
};

// Scores held at once: 16 Mi floats (64 MiB), so a long sequence never needs L x S memory.
constexpr std::int64_t kTileScores = std::int64_t{1} << 24;

template <typename Fn>
void for_each_tile(const Dims& d, Fn&& fn) {
  const std::int64_t rows = d.rows(), per_row = std::max<std::int64_t>(d.kv_len, 1);
  if (rows == 0 || d.blocks() == 0) return;
  if (rows * per_row <= kTileScores) {
    const std::int64_t nb = std::max<std::int64_t>(1, kTileScores / (rows * per_row));
    for (std::int64_t b = 0; b < d.blocks(); b += nb)
      fn(Tile{b, std::min(nb, d.blocks() - b), 0, rows});
    return;
  }
  const std::int64_t m = std::max<std::int64_t>(1, kTileScores / per_row);
  for (std::int64_t b = 0; b < d.blocks(); ++b)
    for (std::int64_t r = 0; r < rows; r += m) fn(Tile{b, 1, r, std::min(m, rows - r)});
}

// s[t] = Q[t] K^T for the tile's rows, [nb, m, kv_len].
void scores(const Dims& d, const Tile& t, const float* q, const float* k, std::vector<float>& s) {
  MatmulShape sh;
  sh.batch = t.nb, sh.m = t.m, sh.n = d.kv_len, sh.k = d.d, sh.rhs_transposed = true;
  s.resize(static_cast<std::size_t>(t.nb * t.m * d.kv_len));
  host_matmul(sh, q + (t.b0 * d.rows() + t.r0) * d.d, k + t.b0 * d.kv_len * d.d, s.data());
}

// Keys visible to tile row |r| (causal: key j is visible to query i when j <= i).
std::int64_t visible(const Dims& d, const Tile& t, std::int64_t r) {
  const std::int64_t i = (t.r0 + r % t.m) % d.q_len;
  return d.causal ? std::min(i + 1, d.kv_len) : d.kv_len;
}

// Runs fn(r) for every row of the tile, split over the thread budget.
template <typename Fn>
void for_rows(const Tile& t, Fn&& fn) {
  const std::int64_t n = t.nb * t.m;
  parallel_ranges(n, 64, executor_threads(), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) fn(r);
  });
}

// row[j] = exp(row[j] * scale - shift) for the visible keys, 0 for the hidden ones.
void exp_row(float* row, std::int64_t visible, std::int64_t len, float scale, float shift) {
  for (std::int64_t j = 0; j < visible; ++j) row[j] = row[j] * scale - shift;
  vecmath::apply(vecmath::Fn::kExp, row, row, visible);
  std::fill(row + visible, row + len, 0.0f);
}

// |x| [B, Hk, S, D] as [B, H, S, D], query head h reading key/value head h / (H / Hk): each
// (batch, head) pair then has its own operands, one batch of a product.
const float* repeat_heads(const Dims& d, const float* x, std::vector<float>& buf) {
  if (d.kv_heads == d.heads) return x;
  const std::int64_t groups = d.heads / d.kv_heads, n = d.kv_len * d.d;
  buf.resize(static_cast<std::size_t>(d.batch * d.heads * n));
  for (std::int64_t bh = 0; bh < d.batch * d.heads; ++bh) {
    const std::int64_t b = bh / d.heads, h = bh % d.heads;
    std::copy_n(x + (b * d.kv_heads + h / groups) * n, n, buf.data() + bh * n);
  }
  return buf.data();
}

// Scores attention_forward computes at once: 1 MiB of float32, so that a step's scores are
// still in cache when the softmax and the second product read them (256 Ki).
constexpr std::int64_t kStepScores = std::int64_t{1} << 18;

// Rows per tile of the causal attention: a tile's products stop at the keys its last row sees.
// At least 32 rows, and at most 8 tiles per head (each distinct key count is one more matmul
// primitive to compile per thread).
std::int64_t causal_tile_rows(std::int64_t q_len) {
  return std::min(q_len, std::max<std::int64_t>(32, (q_len + 7) / 8));
}

// [nh, m, keys] = A B^T for |nh| heads: A |m| rows of a [L, D] head's, B the first |keys| rows
// of a [S, D] head's (a tile of queries against its keys; of dO against the values).
MatmulShape rows_by_keys(const Dims& d, std::int64_t nh, std::int64_t m, std::int64_t keys) {
  MatmulShape sh;
  sh.m = m, sh.n = keys, sh.k = d.d;
  sh.batch_dims = {nh};
  sh.lhs_strides = {d.q_len * d.d, d.d, 1};
  sh.rhs_strides = {d.kv_len * d.d, 1, d.d};
  return sh;
}

// An attention bias broadcast to [B, H, L, S] (its dims right-aligned, size-1 ones broadcast),
// in float32: a float one's values, a boolean one's 0 where true and -inf where false.
struct Bias {
  std::vector<float> values;
  const float* rows = nullptr;
  std::int64_t strides[4] = {0, 0, 0, 0};  // per dim of [B, H, L, S]
  std::int64_t step = 0;                   // strides[3]

  Bias() = default;
  Bias(const hlo::TensorType& t, const void* data) {
    const std::int64_t n = t.num_elements();
    values.resize(static_cast<std::size_t>(n));
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    const int es = hlo::dtype_size(t.dtype);
    for (std::int64_t i = 0; i < n; ++i) {
      const double x = hlo::load_double(t.dtype, bytes + i * es);
      values[static_cast<std::size_t>(i)] =
          t.dtype == hlo::DType::kPred ? (x != 0 ? 0.0f : -std::numeric_limits<float>::infinity())
                                       : static_cast<float>(x);
    }
    rows = values.data();
    const auto r = static_cast<int>(t.dims.size());
    std::int64_t stride = 1;
    for (int i = r - 1; i >= 0; --i) {
      strides[4 - r + i] = t.dims[static_cast<std::size_t>(i)] == 1 ? 0 : stride;
      stride *= t.dims[static_cast<std::size_t>(i)];
    }
    step = strides[3];
  }
  // |type|'s dims as four, leading 1s added.
  static void dims_into(const hlo::TensorType& type, std::int64_t (&dims)[4]) {
    const auto r = static_cast<int>(type.dims.size());
    for (int i = 0; i < r; ++i) dims[4 - r + i] = type.dims[static_cast<std::size_t>(i)];
  }
  // Row |i| of the (batch, head) pair |head| (batch * heads + head).
  const float* row(const Dims& d, std::int64_t head, std::int64_t i) const {
    return rows + (head / d.heads) * strides[0] + (head % d.heads) * strides[1] + i * strides[2];
  }
};

// The operands [first, first + count) are all float32 or all bfloat16: which, or nullopt.
std::optional<bool> bf16_operands(const CustomCallArgs& a, std::size_t first, std::size_t count) {
  const hlo::DType t = a.input_types[first].dtype;
  if (t != hlo::DType::kF32 && t != hlo::DType::kBF16) return std::nullopt;
  for (std::size_t i = first; i < first + count; ++i)
    if (a.input_types[i].dtype != t) return std::nullopt;
  return t == hlo::DType::kBF16;
}

// The attention's shape, causal flag, scale and mask (none without |bias|) into a call of
// ATen's kernels (runtime/aten_attention.h).
template <typename AtenCall>
void describe(const Dims& d, const Bias* bias, const hlo::TensorType* bias_type, AtenCall& c) {
  c.batch = d.batch, c.heads = d.heads, c.kv_heads = d.kv_heads;
  c.q_len = d.q_len, c.kv_len = d.kv_len, c.d = d.d;
  c.causal = d.causal;
  c.scale = d.scale;
  if (bias != nullptr && bias->rows != nullptr) {
    c.mask = bias->rows;
    bias->dims_into(*bias_type, c.mask_dims);
  }
}

// ATen's flash backward (runtime/aten_attention.h) for a backward call whose first four
// operands are grad_output, query, key and value (float32 or bfloat16, one type), given the
// forward's |out| (of that type) and float32 |logsumexp| [B, H, L], and its mask if any: writes
// the gradients into the call's outputs and returns true; false where none is installed, the
// types differ or a shape is empty.
bool aten_flash_attention_backward(const Dims& d, const CustomCallArgs& a, const void* out,
                                   const hlo::TensorType& out_type, const float* logsumexp,
                                   const Bias* bias, const hlo::TensorType* bias_type) {
  const aten_attention::BackwardKernel kernel = aten_attention::installed_backward();
  if (kernel == nullptr || d.rows() == 0 || d.blocks() == 0 || d.kv_len == 0) return false;
  const std::optional<bool> bf16 = bf16_operands(a, 0, 4);
  if (!bf16 || out_type.dtype != a.input_types[0].dtype) return false;
  aten_attention::BackwardCall c;
  c.bf16 = *bf16;
  c.grad_out = a.inputs[0], c.q = a.inputs[1], c.k = a.inputs[2], c.v = a.inputs[3];
  c.out = out;
  c.logsumexp = logsumexp;
  describe(d, bias, bias_type, c);
  c.grad_q = a.outputs[0], c.grad_k = a.outputs[1], c.grad_v = a.outputs[2];
  kernel(c);
  return true;
}

// ATen's own flash attention (runtime/aten_attention.h) for a call whose query, key and value
// (float32 or bfloat16) start at input |first|, with the call's bias if any: writes the call's
// first output (and |logsumexp| when given) and returns true; false where none is installed or
// the types differ.
bool aten_flash_attention(const Dims& d, const CustomCallArgs& a, std::size_t first,
                          const Bias* bias, const hlo::TensorType* bias_type, float* logsumexp) {
  const aten_attention::Kernel kernel = aten_attention::installed();
  if (kernel == nullptr) return false;
  const std::optional<bool> bf16 = bf16_operands(a, first, 3);
  if (!bf16) return false;
  aten_attention::Call c;
  c.bf16 = *bf16;
  c.q = a.inputs[first], c.k = a.inputs[first + 1], c.v = a.inputs[first + 2];
  describe(d, bias, bias_type, c);
  c.out = a.outputs[0];
  c.logsumexp = logsumexp;
  kernel(c);
  return true;
}

// One row of attention_through_memory's softmax: row[0, keys) holds q.k for the keys of its
// tile, the first |visible| of them unmasked. Leaves the probabilities in row[0, keys) (zero
// past |visible|) and in p[0, len) (zero past |visible|). As the module's ops: the scores
// scaled and rounded, the max subtracted (0 where it is -inf), exp, the sum s, then divided by
// max(s, 1) (NaN stays NaN). The masked scores are never read, as in ATen's and the NKI flash
// kernels: a NaN or inf key hidden by the mask does not reach the row. With an attention bias,
// bias[j * bias_step] is added to score j after the scale (-inf where a boolean mask is false).
// Returns the row's logsumexp (-inf for a row with no visible key).
template <bool kBias>
VTRN_CLONES float softmax_row(float* __restrict row, std::int64_t visible, std::int64_t keys,
                              float scale, const float* __restrict bias, std::int64_t bias_step,
                              float* __restrict p, std::int64_t len) {
  constexpr int kLanes = 8;
  float mx[kLanes], sum[kLanes];
  bool nan = false;
  for (float& m : mx) m = -std::numeric_limits<float>::infinity();
  std::int64_t j = 0;
  for (; j + kLanes <= visible; j += kLanes)
    for (int t = 0; t < kLanes; ++t) {
      // The score as the ops round it: scaled, then the bias added.
      const float x = kBias ? row[j + t] * scale + bias[(j + t) * bias_step] : row[j + t] * scale;
      row[j + t] = x;
      nan |= x != x;
      mx[t] = mx[t] < x ? x : mx[t];
    }
  for (; j < visible; ++j) {
    const float x = kBias ? row[j] * scale + bias[j * bias_step] : row[j] * scale;
    row[j] = x;
    nan |= x != x;
    mx[0] = mx[0] < x ? x : mx[0];
  }
  float m = mx[0];
  for (int t = 1; t < kLanes; ++t) m = m < mx[t] ? mx[t] : m;
  if (nan) m = std::numeric_limits<float>::quiet_NaN();
  if (m == -std::numeric_limits<float>::infinity()) m = 0;
  for (std::int64_t i = 0; i < visible; ++i) row[i] -= m;
  vecmath::apply(vecmath::Fn::kExp, row, row, visible);
  for (float& s : sum) s = 0;
  for (j = 0; j + kLanes <= visible; j += kLanes)
    for (int t = 0; t < kLanes; ++t) sum[t] += row[j + t];
  for (; j < visible; ++j) sum[0] += row[j];
  float l = ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7]));
  const float lse = l == 0 ? -std::numeric_limits<float>::infinity() : m + std::log(l);
  if (!(l != l)) l = std::max(l, 1.0f);
  for (std::int64_t i = 0; i < visible; ++i) p[i] = row[i] = row[i] / l;
  std::fill(row + visible, row + keys, 0.0f);
  std::fill(p + visible, p + len, 0.0f);
  return lse;
}

// One row of attention_backward_through_memory's softmax backward, over the keys of its tile:
// ds[j] = p[j] (ds[j] - delta) scale with delta = sum_j p[j] ds[j] (|ds| holds dP on entry).
// The keys past the tile have zero probabilities, so zero gradients.
VTRN_CLONES void softmax_backward_row(const float* __restrict p, float* __restrict ds,
                                      std::int64_t keys, float scale) {
  constexpr int kLanes = 8;
  float acc[kLanes] = {};
  std::int64_t j = 0;
  for (; j + kLanes <= keys; j += kLanes)
    for (int t = 0; t < kLanes; ++t) acc[t] += p[j + t] * ds[j + t];
  for (; j < keys; ++j) acc[0] += p[j] * ds[j];
  const float delta =
      ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (std::int64_t i = 0; i < keys; ++i) ds[i] = p[i] * (ds[i] - delta) * scale;
}

// |into| += |part|, n elements.
void accumulate(float* __restrict into, const float* __restrict part, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) into[i] += part[i];
}

}  // namespace

void attention_forward(const CustomCallArgs& a) {
  const Dims d = dims_of(a, 0, "vtrn.attention");
  std::vector<float> qc, kc, vc, kr, vr, s, aten_lse;
  const Bias bias = a.inputs.size() > 3 ? Bias(a.input_types[3], a.inputs[3]) : Bias();
  const std::int64_t heads = d.batch * d.heads, L = d.q_len, S = d.kv_len, D = d.d;
  // The output and logsumexp from ATen's kernel where it and ATen's flash backward are
  // installed. That backward reads only the logsumexp, so the probabilities (the scores' product
  // and an exp each, more work than ATen's whole forward) are not computed.
  if (heads > 0 && L > 0 && S > 0) aten_lse.resize(static_cast<std::size_t>(heads * L));
  const bool aten_output =
      heads > 0 && L > 0 && S > 0 && aten_attention::installed_backward() != nullptr &&
      aten_flash_attention(d, a, 0, &bias, a.inputs.size() > 3 ? &a.input_types[3] : nullptr,
                           aten_lse.data());
  SavedRows saved(a.output_types[1], a.outputs[1], S, /*probabilities=*/!aten_output);
  if (aten_output) {
    saved.store_logsumexp_only(aten_lse);
    return;
  }
  const float* q = as_f32(a.input_types[0], a.inputs[0], qc);
  const float* k = repeat_heads(d, as_f32(a.input_types[1], a.inputs[1], kc), kr);
  const float* v = repeat_heads(d, as_f32(a.input_types[2], a.inputs[2], vc), vr);
  F32Out out(a.output_types[0], a.outputs[0], /*zeroed=*/S == 0);
  for (std::int64_t r = 0; r < heads * L && S == 0; ++r)
    saved.set_logsumexp(r, -std::numeric_limits<float>::infinity());
  if (heads > 0 && L > 0 && S > 0) {
    float* o = out.data();
    const std::int64_t tile = d.causal ? causal_tile_rows(L) : L;
    // Heads per step: as many as keep a step's scores in a core's L2 (kStepScores).
    const std::int64_t per = std::max<std::int64_t>(1, kStepScores / (tile * S));
    const auto scale = static_cast<float>(d.scale);
    for (std::int64_t h0 = 0; h0 < heads; h0 += per) {
      const std::int64_t nh = std::min(per, heads - h0);
      for (std::int64_t r0 = 0; r0 < L; r0 += tile) {
        const std::int64_t m = std::min(tile, L - r0);
        const std::int64_t keys = d.causal ? std::min(r0 + m, S) : S;
        // Scores [nh, m, keys] = Q[h0 .., r0 .. r0 + m) K[h0 .., 0 .. keys)^T.
        s.resize(static_cast<std::size_t>(nh * m * keys));
        host_matmul(rows_by_keys(d, nh, m, keys), q + (h0 * L + r0) * D, k + h0 * S * D, s.data());
        parallel_ranges(nh * m, 16, executor_threads(), [&](std::int64_t lo, std::int64_t hi) {
          for (std::int64_t r = lo; r < hi; ++r) {
            const std::int64_t i = r0 + r % m;  // the query row
            const std::int64_t visible = d.causal ? std::min(i + 1, S) : S;
            const std::int64_t head = h0 + r / m;
            float* scores = s.data() + r * keys;
            const std::int64_t row = head * L + i;
            const float lse =
                bias.rows == nullptr
                    ? softmax_row<false>(scores, visible, keys, scale, nullptr, 0, saved.row(row),
                                         S)
                    : softmax_row<true>(scores, visible, keys, scale, bias.row(d, head, i),
                                        bias.step, saved.row(row), S);
            saved.set_logsumexp(row, lse);
          }
        });
        // Output rows [nh, m, D] = P[.., 0 .. keys) V[h0 .., 0 .. keys), written in place.
        MatmulShape pv;
        pv.m = m, pv.n = D, pv.k = keys;
        pv.batch_dims = {nh};
        pv.lhs_strides = {m * keys, keys, 1};
        pv.rhs_strides = {S * D, D, 1};
        pv.out_strides = {L * D, D, 1};
        host_matmul(pv, s.data(), v + h0 * S * D, o + (h0 * L + r0) * D);
      }
    }
  }
  out.store();
  saved.store();
}

void attention_backward(const CustomCallArgs& a) {
  const Dims d = dims_of(a, 1, "vtrn.attention_backward");
  std::vector<float> gc, qc, kc, vc, pc, lse, kr, vr, dkh, dvh, ds;
  // ATen's flash backward where installed, from the logsumexp the forward saved: the CPU's
  // gradients, since ATen's flash forward made that forward's output and logsumexp.
  if (aten_attention::installed_backward() != nullptr && d.rows() > 0 && d.blocks() > 0 &&
      d.kv_len > 0) {
    saved_logsumexp(a.input_types[4], a.inputs[4], d.kv_len, lse);
    const Bias bias = a.inputs.size() > 6 ? Bias(a.input_types[6], a.inputs[6]) : Bias();
    if (aten_flash_attention_backward(d, a, a.inputs[5], a.input_types[5], lse.data(), &bias,
                                      a.inputs.size() > 6 ? &a.input_types[6] : nullptr))
      return;
  }
  const float* g = as_f32(a.input_types[0], a.inputs[0], gc);
  const float* q = as_f32(a.input_types[1], a.inputs[1], qc);
  const float* k = repeat_heads(d, as_f32(a.input_types[2], a.inputs[2], kc), kr);
  const float* v = repeat_heads(d, as_f32(a.input_types[3], a.inputs[3], vc), vr);
  const float* p = saved_probabilities(a.input_types[4], a.inputs[4], d.kv_len, pc);
  const std::int64_t heads = d.batch * d.heads, L = d.q_len, S = d.kv_len, D = d.d;
  const std::int64_t groups = d.heads / d.kv_heads;
  // The causal mask leaves keys past the last query without probabilities: zero gradients.
  const std::int64_t seen = d.causal ? std::min(L, S) : S;  // keys some query sees
  // Zeroed where something is left unwritten or summed into.
  const bool sum_into = seen < S || groups > 1;
  F32Out dq(a.output_types[0], a.outputs[0], S == 0), dk(a.output_types[1], a.outputs[1], sum_into),
      dv(a.output_types[2], a.outputs[2], sum_into);
  // The key and value gradients per query head, summed over each group at the end.
  float* dk_heads = dk.data();
  float* dv_heads = dv.data();
  if (groups > 1) {
    // Every row of a head is written (or left zero past the keys some query sees).
    dkh.assign(static_cast<std::size_t>(heads * S * D), 0.0f);
    dvh.assign(dkh.size(), 0.0f);
    dk_heads = dkh.data(), dv_heads = dvh.data();
  }
  if (heads > 0 && L > 0 && S > 0) {
    const std::int64_t tile = d.causal ? causal_tile_rows(L) : L;
    // Whole heads per step: a key's gradients read every row of its head's dS.
    const std::int64_t per = std::max<std::int64_t>(1, kStepScores / (L * S));
    const auto scale = static_cast<float>(d.scale);
    for (std::int64_t h0 = 0; h0 < heads; h0 += per) {
      const std::int64_t nh = std::min(per, heads - h0);
      ds.resize(static_cast<std::size_t>(nh * L * S));
      // By row tiles: dP = dO V^T, then dS = P (dP - rowsum(P dP)) scale in place, then
      // dQ = dS K, each over the keys the tile's rows see.
      for (std::int64_t r0 = 0; r0 < L; r0 += tile) {
        const std::int64_t m = std::min(tile, L - r0);
        const std::int64_t keys = d.causal ? std::min(r0 + m, S) : S;
        MatmulShape sh = rows_by_keys(d, nh, m, keys);
        sh.out_strides = {L * S, S, 1};
        host_matmul(sh, g + (h0 * L + r0) * D, v + h0 * S * D, ds.data() + r0 * S);
        parallel_ranges(nh * m, 16, executor_threads(), [&](std::int64_t lo, std::int64_t hi) {
          for (std::int64_t r = lo; r < hi; ++r) {
            const std::int64_t row = (r / m) * L + r0 + r % m;  // within the step
            softmax_backward_row(p + (h0 * L + row) * S, ds.data() + row * S, keys, scale);
          }
        });
        sh = MatmulShape{};
        sh.m = m, sh.n = D, sh.k = keys;
        sh.batch_dims = {nh};
        sh.lhs_strides = {L * S, S, 1};
        sh.rhs_strides = {S * D, D, 1};
        sh.out_strides = {L * D, D, 1};
        host_matmul(sh, ds.data() + r0 * S, k + h0 * S * D, dq.data() + (h0 * L + r0) * D);
      }
      // By key tiles: dK = dS^T Q and dV = P^T dO over the rows that see the tile's keys
      // (causal: those from its first key on; the tiles of rows above computed them all).
      for (std::int64_t c0 = 0; c0 < seen; c0 += tile) {
        const std::int64_t n = std::min(tile, seen - c0);
        const std::int64_t r0 = d.causal ? c0 : 0;
        MatmulShape sh;
        sh.m = n, sh.n = D, sh.k = L - r0;
        sh.batch_dims = {nh};
        sh.lhs_strides = {L * S, 1, S};
        sh.rhs_strides = {L * D, D, 1};
        sh.out_strides = {S * D, D, 1};
        host_matmul(sh, ds.data() + r0 * S + c0, q + (h0 * L + r0) * D,
                    dk_heads + (h0 * S + c0) * D);
        host_matmul(sh, p + (h0 * L + r0) * S + c0, g + (h0 * L + r0) * D,
                    dv_heads + (h0 * S + c0) * D);
      }
    }
  }
  if (groups > 1)
    for (std::int64_t bh = 0; bh < heads; ++bh) {
      const std::int64_t b = bh / d.heads, kh = b * d.kv_heads + bh % d.heads / groups;
      accumulate(dk.data() + kh * S * D, dkh.data() + bh * S * D, S * D);
      accumulate(dv.data() + kh * S * D, dvh.data() + bh * S * D, S * D);
    }
  dq.store();
  dk.store();
  dv.store();
}

void flash_attention_forward(const CustomCallArgs& a) {
  const Dims d = dims_of(a, 0, "vtrn.flash_attention");
  std::vector<float> qc, kc, vc, s;
  const float* q = as_f32(a.input_types[0], a.inputs[0], qc);
  const float* k = as_f32(a.input_types[1], a.inputs[1], kc);
  const float* v = as_f32(a.input_types[2], a.inputs[2], vc);
  if (d.rows() > 0 && d.blocks() > 0 && d.kv_len > 0 &&
      a.output_types[1].dtype == hlo::DType::kF32 &&
      aten_flash_attention(d, a, 0, nullptr, nullptr, static_cast<float*>(a.outputs[1])))
    return;
  F32Out out(a.output_types[0], a.outputs[0]), lse(a.output_types[1], a.outputs[1]);
  const auto scale = static_cast<float>(d.scale);
  for_each_tile(d, [&](const Tile& t) {
    scores(d, t, q, k, s);
    float* lse_tile = lse.data() + t.b0 * d.rows() + t.r0;
    // Softmax rows: probabilities = exp(x - max) / sum, the sum taken in double.
    for_rows(t, [&](std::int64_t r) {
      float* row = s.data() + r * d.kv_len;
      const std::int64_t vis = visible(d, t, r);
      float m = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = 0; j < vis; ++j) m = std::max(m, row[j] * scale);
      if (vis == 0) {
        std::fill(row, row + d.kv_len, 0.0f);
        lse_tile[r] = -std::numeric_limits<float>::infinity();
        return;
      }
      exp_row(row, vis, d.kv_len, scale, m);
      double sum = 0;
      for (std::int64_t j = 0; j < vis; ++j) sum += row[j];
      lse_tile[r] = m + static_cast<float>(std::log(sum));
      const auto inv = static_cast<float>(1.0 / sum);
      for (std::int64_t j = 0; j < vis; ++j) row[j] *= inv;
    });
    MatmulShape pv;
    pv.batch = t.nb, pv.m = t.m, pv.n = d.d, pv.k = d.kv_len;
    host_matmul(pv, s.data(), v + t.b0 * d.kv_len * d.d,
                out.data() + (t.b0 * d.rows() + t.r0) * d.d);
  });
  out.store();
  lse.store();
}

void flash_attention_backward(const CustomCallArgs& a) {
  const Dims d = dims_of(a, 1, "vtrn.flash_attention_backward");
  if (a.input_types[5].dtype == hlo::DType::kF32 &&
      aten_flash_attention_backward(d, a, a.inputs[4], a.input_types[4],
                                    static_cast<const float*>(a.inputs[5]), nullptr, nullptr))
    return;
  std::vector<float> goc, qc, kc, vc, oc, lc, p, dp, part;
  const float* go = as_f32(a.input_types[0], a.inputs[0], goc);
  const float* q = as_f32(a.input_types[1], a.inputs[1], qc);
  const float* k = as_f32(a.input_types[2], a.inputs[2], kc);
  const float* v = as_f32(a.input_types[3], a.inputs[3], vc);
  const float* o = as_f32(a.input_types[4], a.inputs[4], oc);
  const float* lse = as_f32(a.input_types[5], a.inputs[5], lc);
  // dK and dV sum over every query row of a block: zeroed, then each tile adds its part.
  F32Out dq(a.output_types[0], a.outputs[0]), dk(a.output_types[1], a.outputs[1], true),
      dv(a.output_types[2], a.outputs[2], true);
  const auto scale = static_cast<float>(d.scale);
  const std::int64_t kn = d.kv_len * d.d;
  for_each_tile(d, [&](const Tile& t) {
    const std::int64_t first = t.b0 * d.rows() + t.r0;  // the tile's first query row
    scores(d, t, q, k, p);
    // dP = dO V^T
    MatmulShape sh;
    sh.batch = t.nb, sh.m = t.m, sh.n = d.kv_len, sh.k = d.d, sh.rhs_transposed = true;
    dp.resize(p.size());
    host_matmul(sh, go + first * d.d, v + t.b0 * kn, dp.data());
    // P from the logsumexp, as the forward made it; dS = P (dP - rowsum(dO O)) scale.
    for_rows(t, [&](std::int64_t r) {
      float* prow = p.data() + r * d.kv_len;
      float* dsrow = dp.data() + r * d.kv_len;
      const float l = lse[first + r];
      if (std::isinf(l)) {
        std::fill(prow, prow + d.kv_len, 0.0f);
        std::fill(dsrow, dsrow + d.kv_len, 0.0f);
        return;
      }
      exp_row(prow, visible(d, t, r), d.kv_len, scale, l);
      const float* gor = go + (first + r) * d.d;
      const float* orow = o + (first + r) * d.d;
      float delta = 0;
      for (std::int64_t c = 0; c < d.d; ++c) delta += gor[c] * orow[c];
      for (std::int64_t j = 0; j < d.kv_len; ++j) dsrow[j] = prow[j] * (dsrow[j] - delta) * scale;
    });
    // dQ = dS K
    sh = MatmulShape{};
    sh.batch = t.nb, sh.m = t.m, sh.n = d.d, sh.k = d.kv_len;
    host_matmul(sh, dp.data(), k + t.b0 * kn, dq.data() + first * d.d);
    // dV += P^T dO and dK += dS^T Q, over the tile's rows.
    sh = MatmulShape{};
    sh.batch = t.nb, sh.m = d.kv_len, sh.n = d.d, sh.k = t.m, sh.lhs_transposed = true;
    part.resize(static_cast<std::size_t>(t.nb * kn));
    const auto accumulate = [&](const float* lhs, const float* rhs, float* into) {
      host_matmul(sh, lhs, rhs, part.data());
      for (std::int64_t i = 0; i < t.nb * kn; ++i) into[i] += part[i];
    };
    accumulate(p.data(), go + first * d.d, dv.data() + t.b0 * kn);
    accumulate(dp.data(), q + first * d.d, dk.data() + t.b0 * kn);
  });
  dq.store();
  dk.store();
  dv.store();
}

}  // namespace vtrn::runtime::kernels
