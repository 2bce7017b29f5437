// The reduce at the root of a fused loop (see kernels_reduce.h for the summation trees).
#include "vtrn/runtime/kernels_reduce.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>
#include <vector>

#include "vtrn/runtime/aten_sum.h"
#include "vtrn/runtime/isa_clones.h"
#include "vtrn/runtime/kernels_elementwise.h"

namespace vtrn::runtime::kernels {

using hlo::ReduceKind;

ReduceLayout::ReduceLayout(ReduceKind k, const std::vector<std::int64_t>& dims,
                           const std::vector<std::int64_t>& reduced_dims)
    : kind(k), domain(dims) {
  const int rank = static_cast<int>(domain.size());
  std::vector<bool> reduced(domain.size(), false);
  for (std::int64_t d : reduced_dims) reduced[static_cast<std::size_t>(d)] = true;
  out_strides.assign(domain.size(), 0);
  out_n = 1;
  red_n = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (reduced[d]) {
      red_n *= domain[d];
    } else {
      out_strides[d] = out_n;
      out_n *= domain[d];
    }
  }
  // Merged dims, outermost first.
  std::vector<bool> merged_reduced;
  for (int d = 0; d < rank; ++d) {
    if (domain[d] == 1) continue;
    if (!merged.empty() && merged_reduced.back() == reduced[d]) {
      merged.back() *= domain[d];
    } else {
      merged.push_back(domain[d]);
      merged_reduced.push_back(reduced[d]);
    }
  }
  const std::size_t m = merged.size();
  merged_out_strides.assign(m, 0);
  merged_red_strides.assign(m, 0);
  std::int64_t os = 1, rs = 1;
  for (std::size_t i = m; i-- > 0;) {
    if (merged_reduced[i]) {
      merged_red_strides[i] = rs;
      rs *= merged[i];
    } else {
      merged_out_strides[i] = os;
      os *= merged[i];
    }
  }
  // Trailing: at most one kept group followed by at most one reduced group.
  trailing = m == 0 || (m == 1) || (m == 2 && !merged_reduced[0] && merged_reduced[1]);
  columns = (m == 2 && merged_reduced[0] && !merged_reduced[1]) ||
            (m == 3 && !merged_reduced[0] && merged_reduced[1] && !merged_reduced[2]);
}

// ---------------------------------------------------------------------------------------------
// PairwiseSum

namespace {

// Pairwise sum of l[0..w) (w a power of two), in place: l[j] += l[j + w/2], then halves.
template <typename T>
T lane_tree(T* l, int w) {
  for (int h = w / 2; h >= 1; h /= 2)
    for (int j = 0; j < h; ++j) l[j] = l[j] + l[j + h];
  return l[0];
}

// One whole block, as the lanes would sum it element by element.
template <typename T>
T block_sum(const T* __restrict x) {
  constexpr int kLanes = PairwiseSum<T>::kLanes;
  T l[kLanes] = {};
  for (int i = 0; i < PairwiseSum<T>::kBlock; i += kLanes)
    for (int j = 0; j < kLanes; ++j) l[j] = l[j] + x[i + j];
  return lane_tree(l, kLanes);
}

}  // namespace

template <typename T>
void PairwiseSum<T>::reset() {
  std::fill_n(lanes_, kLanes, T(0));
  fill_ = 0;
  blocks_ = 0;
}

template <typename T>
void PairwiseSum<T>::push(T s) {
  std::uint64_t b = blocks_++;
  int j = 0;
  for (; b & 1; b >>= 1, ++j) s = levels_[j] + s;
  levels_[j] = s;
}

template <typename T>
void PairwiseSum<T>::add(const T* x, std::int64_t n) {
  while (n > 0) {
    if (fill_ == 0) {
      for (; n >= kBlock; x += kBlock, n -= kBlock) push(block_sum(x));
      if (n == 0) return;
    }
    // Part of a block: element p of the block goes to lane p % kLanes, as in block_sum.
    const int m = static_cast<int>(std::min<std::int64_t>(n, kBlock - fill_));
    T l[kLanes];
    std::copy_n(lanes_, kLanes, l);
    int p = fill_, i = 0;
    for (; i < m && p % kLanes != 0; ++i, ++p) l[p % kLanes] = l[p % kLanes] + x[i];
    for (; i + kLanes <= m; i += kLanes, p += kLanes)
      for (int j = 0; j < kLanes; ++j) l[j] = l[j] + x[i + j];
    for (; i < m; ++i, ++p) l[p % kLanes] = l[p % kLanes] + x[i];
    x += m;
    n -= m;
    if (p == kBlock) {
      push(lane_tree(l, kLanes));
      std::fill_n(lanes_, kLanes, T(0));
      fill_ = 0;
    } else {
      std::copy_n(l, kLanes, lanes_);
      fill_ = p;
    }
  }
}

template <typename T>
T PairwiseSum<T>::sum() const {
  // Lanes never hold -0 (they start at +0, and x + y is -0 only when both are), so the lanes a
  // part block did not reach are exact zeros and the tree can skip them, and starting the fold
  // from +0 changes nothing.
  T s = T(0);
  if (fill_ > 0) {
    T l[kLanes];
    std::copy_n(lanes_, kLanes, l);
    s = lane_tree(l,
                  static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::min(fill_, kLanes)))));
  }
  std::uint64_t b = blocks_;
  for (int j = 0; b != 0; b >>= 1, ++j)
    if (b & 1) s = levels_[j] + s;
  return s;
}

template <typename T>
T PairwiseSum<T>::of(const T* x, std::int64_t n) {
  if (n <= kLanes) {
    // One part block: lane j holds +0 + x[j].
    T l[kLanes];
    for (int j = 0; j < n; ++j) l[j] = T(0) + x[j];
    if (n == 0) return T(0);
    const int w = static_cast<int>(std::bit_ceil(static_cast<unsigned>(n)));
    for (int j = static_cast<int>(n); j < w; ++j) l[j] = T(0);
    return lane_tree(l, w);
  }
  PairwiseSum<T> s;
  s.add(x, n);
  return s.sum();
}

template class PairwiseSum<float>;
template class PairwiseSum<double>;

// ---------------------------------------------------------------------------------------------
// Reducers

namespace {

using elementwise::fmax_nan;
using elementwise::fmin_nan;

// Calls f(op) with the combining function of |k| (a + b, a * b, ...), so that the loops f runs
// are compiled once per kind. Kinds a type does not support (and/or on floats) combine nothing.
template <typename T, typename F>
void with_combine(ReduceKind k, F&& f) {
  if constexpr (std::is_same_v<T, std::int64_t>) {
    using U = std::uint64_t;  // wrapping arithmetic
    switch (k) {
      case ReduceKind::kAdd:
        return f([](T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); });
      case ReduceKind::kMul:
        return f([](T a, T b) { return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); });
      case ReduceKind::kMax:
        return f([](T a, T b) { return std::max(a, b); });
      case ReduceKind::kMin:
        return f([](T a, T b) { return std::min(a, b); });
      case ReduceKind::kAnd:
        return f([](T a, T b) { return a & b; });
      case ReduceKind::kOr:
        return f([](T a, T b) { return a | b; });
      default:
        return f([](T a, T) { return a; });
    }
  } else {
    switch (k) {
      case ReduceKind::kAdd:
        return f([](T a, T b) { return a + b; });
      case ReduceKind::kMul:
        return f([](T a, T b) { return a * b; });
      case ReduceKind::kMax:
        return f([](T a, T b) { return fmax_nan(a, b); });
      case ReduceKind::kMin:
        return f([](T a, T b) { return fmin_nan(a, b); });
      default:
        return f([](T a, T) { return a; });
    }
  }
}

// Calls f(o, r, v, m, along_outputs) for each run of |m| values |v| along the last merged dim,
// starting at output |o| and reduced index |r|: consecutive outputs at one reduced index when
// |along_outputs|, else consecutive reduced indices of one output.
template <typename T, typename F>
void for_each_run(const ReduceLayout& l, const T* v, std::int64_t n, std::int64_t start, F&& f) {
  const int rank = static_cast<int>(l.merged.size());
  if (rank == 0) {
    for (std::int64_t i = 0; i < n; ++i) f(std::int64_t{0}, start + i, v + i, 1, false);
    return;
  }
  std::vector<std::int64_t> idx(static_cast<std::size_t>(rank));
  std::int64_t rem = start, o = 0, r = 0;
  for (int d = rank - 1; d >= 0; --d) {
    idx[d] = rem % l.merged[d];
    rem /= l.merged[d];
    o += idx[d] * l.merged_out_strides[d];
    r += idx[d] * l.merged_red_strides[d];
  }
  const int last = rank - 1;
  const bool along_outputs = l.merged_out_strides[last] != 0;
  std::int64_t i = 0;
  while (i < n) {
    const std::int64_t m = std::min(n - i, l.merged[last] - idx[last]);
    f(o, r, v + i, m, along_outputs);
    i += m;
    idx[last] += m;
    o += m * l.merged_out_strides[last];
    r += m * l.merged_red_strides[last];
    for (int d = last; d > 0 && idx[d] == l.merged[d]; --d) {
      o -= l.merged[d] * l.merged_out_strides[d];
      r -= l.merged[d] * l.merged_red_strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      o += l.merged_out_strides[d - 1];
      r += l.merged_red_strides[d - 1];
    }
  }
}

// a's lanes where they win against b's (the greater for max, the lesser for min) or are NaN,
// else b's: fmax_nan / fmin_nan, lane by lane, without branches.
template <typename V>
V max_min_lanes(V a, V b, bool max) {
  const auto keep = ((max ? a > b : a < b) | (a != a)) != 0;
  return keep ? a : b;
}

// The max (or min) of vector |v|'s lanes, |Bytes| bytes of T: its halves combined lane by lane
// until one lane is left.
template <typename T, std::size_t Bytes, typename V>
T fold_lanes(V v, bool max) {
  if constexpr (Bytes == sizeof(T)) {
    T t;
    std::memcpy(&t, &v, sizeof(T));
    return t;
  } else {
    typedef T H __attribute__((vector_size(Bytes / 2)));
    H lo, hi;
    std::memcpy(&lo, &v, Bytes / 2);
    std::memcpy(&hi, reinterpret_cast<const char*>(&v) + Bytes / 2, Bytes / 2);
    return fold_lanes<T, Bytes / 2>(max_min_lanes(lo, hi, max), max);
  }
}

// Products, max, min, and/or, integer sums: each value combined into its output in order.
template <typename T>
class InOrderReducer final : public Reducer {
 public:
  InOrderReducer(const ReduceLayout& l, T* acc)
      : l_(l),
        acc_(acc),
        lanes_(std::is_floating_point_v<T> &&
               (l.kind == hlo::ReduceKind::kMax || l.kind == hlo::ReduceKind::kMin)) {}
  void add(const void* values, std::int64_t n, std::int64_t start) override {
    const T* v = static_cast<const T*>(values);
    with_combine<T>(l_.kind, [&](auto op) {
      for_each_run(l_, v, n, start,
                   [&](std::int64_t o, std::int64_t, const T* x, std::int64_t m, bool along) {
                     if (along) {
                       T* __restrict a = acc_ + o;
                       for (std::int64_t j = 0; j < m; ++j) a[j] = op(a[j], x[j]);
                     } else if (lanes_ && m >= 2 * kLanes) {
                       acc_[o] = op(acc_[o], lanes_max_min(x, m));
                     } else {
                       T a = acc_[o];
                       for (std::int64_t j = 0; j < m; ++j) a = op(a, x[j]);
                       acc_[o] = a;
                     }
                   });
    });
  }
  void finish() override {}

 private:
  static constexpr int kLanes = 64 / sizeof(T);  // four SSE vectors
  // The max (or min) of x[0 .. m), m >= kLanes, NaN if any is: in kLanes lanes, then the lanes
  // pairwise, then the tail in order. Max and min are order-free but for which of +0 and -0
  // wins a tie (ATen's vectorized kernels differ from each other there too); one chain of
  // dependent compares would cost a few cycles per element. Written with vector types: GCC
  // leaves the scalar form's NaN test as branches.
  T lanes_max_min(const T* x, std::int64_t m) const {
    if constexpr (std::is_floating_point_v<T>) {
      // SSE-width vectors, which the baseline x86-64 target selects on without branches (a
      // wider generic vector is split into scalar code there); four of them for independent
      // compare chains.
      typedef T V __attribute__((vector_size(16)));
      constexpr int kPer = sizeof(V) / sizeof(T);
      const bool max = l_.kind == hlo::ReduceKind::kMax;
      V lane[4], v;
      std::memcpy(lane, x, sizeof(lane));
      std::int64_t j = kLanes;
      for (; j + kLanes <= m; j += kLanes)
        for (int k = 0; k < 4; ++k) {
          std::memcpy(&v, x + j + k * kPer, sizeof(V));
          lane[k] = max_min_lanes(lane[k], v, max);
        }
      const V pair0 = max_min_lanes(lane[0], lane[1], max),
              pair1 = max_min_lanes(lane[2], lane[3], max);
      T a = fold_lanes<T, sizeof(V)>(max_min_lanes(pair0, pair1, max), max);
      for (; j < m; ++j) a = max ? elementwise::fmax_nan(a, x[j]) : elementwise::fmin_nan(a, x[j]);
      return a;
    } else {
      return x[0];  // not reached: lanes_ is set for floating point only
    }
  }
  const ReduceLayout& l_;
  T* acc_;
  bool lanes_;  ///< combined in lanes: max and min
};

// A float32 row summed in one of ATen's orders (aten_sum.h: |RowSum| is row_sum or
// reduce_all_row_sum), with PairwiseSum's interface: a row given in pieces is gathered first.
template <float (*RowSum)(const float*, std::int64_t)>
class AtenRowSum {
 public:
  void reset() { row_.clear(); }
  void add(const float* x, std::int64_t n) { row_.insert(row_.end(), x, x + n); }
  float sum() const { return RowSum(row_.data(), static_cast<std::int64_t>(row_.size())); }
  static float of(const float* x, std::int64_t n) { return RowSum(x, n); }

 private:
  std::vector<float> row_;
};

// Float sums over trailing reduced dims: one Row (PairwiseSum, or AtenRowSum for a reduce
// marked cascade_sum) for the output in progress; a row a chunk holds whole is summed in place.
template <typename T, typename Row = PairwiseSum<T>>
class TrailingSumReducer final : public Reducer {
 public:
  TrailingSumReducer(const ReduceLayout& l, T* acc) : n_(l.red_n), acc_(acc) {}
  void add(const void* values, std::int64_t n, std::int64_t start) override {
    const T* v = static_cast<const T*>(values);
    std::int64_t i = 0;
    while (i < n) {
      const std::int64_t g = start + i, o = g / n_, pos = g - o * n_;
      const std::int64_t m = std::min(n - i, n_ - pos);
      if (pos == 0 && m == n_) {
        acc_[o] = acc_[o] + Row::of(v + i, m);
      } else {
        if (pos == 0) open_.reset();
        open_.add(v + i, m);
        if (pos + m == n_) acc_[o] = acc_[o] + open_.sum();
      }
      i += m;
    }
  }
  void finish() override {}

 private:
  std::int64_t n_;
  T* acc_;
  Row open_;
};

// Float sums over any other layout: per output, a part block and the binary counter's levels,
// each an array over the outputs so that a run along the outputs is one vector loop.
template <typename T>
class StridedSumReducer final : public Reducer {
 public:
  static constexpr std::int64_t kBlock = 8;

  StridedSumReducer(const ReduceLayout& l, T* acc)
      : l_(l),
        acc_(acc),
        blocks_(l.red_n / kBlock),
        levels_(std::bit_width(static_cast<std::uint64_t>(blocks_))),
        part_(static_cast<std::size_t>(l.out_n * (1 + levels_)), T(0)) {}

  void add(const void* values, std::int64_t n, std::int64_t start) override {
    const T* v = static_cast<const T*>(values);
    for_each_run(l_, v, n, start,
                 [&](std::int64_t o, std::int64_t r, const T* x, std::int64_t m, bool along) {
                   if (along) {
                     T* __restrict c = part_.data() + o;
                     for (std::int64_t j = 0; j < m; ++j) c[j] = c[j] + x[j];
                     if ((r + 1) % kBlock == 0) carry(o, m, (r + 1) / kBlock - 1);
                     return;
                   }
                   T s = part_[static_cast<std::size_t>(o)];
                   for (std::int64_t j = 0; j < m; ++j) {
                     s = s + x[j];
                     if ((r + j + 1) % kBlock == 0) {
                       part_[static_cast<std::size_t>(o)] = s;
                       carry(o, 1, (r + j + 1) / kBlock - 1);
                       s = T(0);
                     }
                   }
                   part_[static_cast<std::size_t>(o)] = s;
                 });
  }

  void finish() override {
    T* c = part_.data();
    for (int j = 0; j < levels_; ++j) {
      if (((blocks_ >> j) & 1) == 0) continue;
      const T* lv = level(j);
      for (std::int64_t o = 0; o < l_.out_n; ++o) c[o] = lv[o] + c[o];
    }
    for (std::int64_t o = 0; o < l_.out_n; ++o) acc_[o] = acc_[o] + c[o];
  }

 private:
  T* level(int j) { return part_.data() + (1 + j) * l_.out_n; }

  // Block |b| (0-based) of outputs [o, o + m) is complete: push it into the binary counter.
  void carry(std::int64_t o, std::int64_t m, std::int64_t b) {
    const int ones = std::countr_one(static_cast<std::uint64_t>(b));
    T* __restrict c = part_.data() + o;
    for (int j = 0; j < ones; ++j) {
      const T* __restrict lv = level(j) + o;
      for (std::int64_t k = 0; k < m; ++k) c[k] = lv[k] + c[k];
    }
    T* __restrict d = level(ones) + o;
    for (std::int64_t k = 0; k < m; ++k) {
      d[k] = c[k];
      c[k] = T(0);
    }
  }

  const ReduceLayout& l_;
  T* acc_;
  std::int64_t blocks_;
  int levels_;
  std::vector<T> part_;  ///< the part blocks, then each level, |out_n| values apiece
};

// acc[k] += x[k]: the column sums' step, per instruction set (a reducer's member functions
// are not cloned).
VTRN_CLONES void accumulate(float* __restrict acc, const float* __restrict x, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) acc[k] = acc[k] + x[k];
}

// A float32 sum over [kept, rows, columns] in ATen's order (ReduceLayout::columns). ATen's
// vectorized_outer_sum takes the columns in groups of 4 vectors of 8 (scalar_outer_sum, under 8
// columns: groups of 4): a grouped column runs the rows in turn through multi_row_sum's levels;
// each of the last columns % 32 (% 4) is a row_sum, which deals the rows to 4 partial sums in
// turn (row r to partial r % 4) through levels over the rows / 4 rounds, adds the last rows % 4
// to partial 0 and the partials in order. The slabs come one after another, each a row at a time
// across its columns, so the state is per column of one slab and a row's run is a vector loop.
// Only the levels the rows reach are kept (level j once there are 2^(p j) rows).
class ColumnSumReducer final : public Reducer {
 public:
  static constexpr int kLevels = aten_sum::kLevels;
  static constexpr int kIlp = aten_sum::kIlp;

  ColumnSumReducer(const ReduceLayout& l, float* acc)
      : acc_(acc),
        out_n_(l.out_n),
        rows_(l.red_n),
        width_(l.merged.back()),
        grouped_(width_ >= 8 ? width_ / 32 * 32 : width_ / 4 * 4),
        rounds_(rows_ / kIlp),
        power_(aten_sum::level_power(rows_)),
        round_power_(aten_sum::level_power(rounds_)),
        levels_used_(levels_reached(rows_, power_)),
        round_levels_used_(levels_reached(rounds_, round_power_)),
        levels_(static_cast<std::size_t>(levels_used_ * grouped_), 0.0f),
        partial_levels_(static_cast<std::size_t>(round_levels_used_ * kIlp * (width_ - grouped_)),
                        0.0f),
        partials_(static_cast<std::size_t>(kIlp * (width_ - grouped_)), 0.0f) {}

  void add(const void* values, std::int64_t n, std::int64_t start) override {
    const float* x = static_cast<const float*>(values);
    const std::int64_t tail = width_ - grouped_;
    for (std::int64_t e = start, end = start + n; e < end;) {
      const std::int64_t c = e % width_, row = e / width_ % rows_, slab = e / width_ / rows_;
      const std::int64_t m = std::min(end - e, width_ - c);
      const float* v = x + (e - start);
      if (c < grouped_) accumulate(levels_.data() + c, v, std::min(m, grouped_ - c));
      if (c + m > grouped_) {
        const std::int64_t from = std::max(c, grouped_);
        float* a = row < rounds_ * kIlp
                       ? partial_levels_.data() + (row % kIlp) * tail + (from - grouped_)
                       : partials_.data() + (from - grouped_);
        accumulate(a, v + (from - c), c + m - from);
      }
      e += m;
      if (c + m == width_) row_done(slab * width_, row + 1);
    }
  }

  void finish() override {}  // a slab's outputs are stored after its last row

 private:
  static int levels_reached(std::int64_t size, int power) {
    int used = 1;
    while (used < kLevels && (size >> (power * used)) > 0) ++used;
    return used;
  }

  // After |i| whole rows (rounds) of 2^power: level 0 carries into level 1, and level j into
  // j + 1 while i is a multiple of 2^(power (j + 1)). |lv| is level 0 of |n| columns, each level
  // |stride| apart.
  static void carry(float* lv, std::int64_t stride, std::int64_t n, std::int64_t i, int power) {
    const std::int64_t step = std::int64_t{1} << power;
    if (i % step != 0) return;
    for (int j = 1; j < kLevels; ++j) {
      accumulate(lv + j * stride, lv + (j - 1) * stride, n);
      std::fill_n(lv + (j - 1) * stride, n, 0.0f);
      if ((i & ((step - 1) << (j * power))) != 0) return;
    }
  }

  // Level 0 of |n| (row_sum) columns plus the |used| - 1 levels above it in order
  // (multi_row_sum's end), into |out|.
  static void fold(const float* lv, std::int64_t stride, std::int64_t n, int used, float* out) {
    for (std::int64_t k = 0; k < n; ++k) {
      float s = lv[k];
      for (int j = 1; j < used; ++j) s = s + lv[j * stride + k];
      out[k] = s;
    }
  }

  // Rows [0, i) of the slab whose outputs start at |o| are in.
  void row_done(std::int64_t o, std::int64_t i) {
    const std::int64_t tail = width_ - grouped_;
    carry(levels_.data(), grouped_, grouped_, i, power_);
    if (tail > 0 && i % kIlp == 0 && i / kIlp <= rounds_) {
      for (int k = 0; k < kIlp; ++k)
        carry(partial_levels_.data() + k * tail, kIlp * tail, tail, i / kIlp, round_power_);
      if (i / kIlp == rounds_)
        for (int k = 0; k < kIlp; ++k)
          fold(partial_levels_.data() + k * tail, kIlp * tail, tail, round_levels_used_,
               partials_.data() + k * tail);
    }
    if (i != rows_) return;
    // Level 0 plus the levels above in order, then added to the init values.
    for (int j = 1; j < levels_used_; ++j)
      accumulate(levels_.data(), levels_.data() + j * grouped_, grouped_);
    accumulate(acc_ + o, levels_.data(), grouped_);
    for (std::int64_t c = 0; c < tail; ++c) {
      float s = partials_[static_cast<std::size_t>(c)];
      for (int k = 1; k < kIlp; ++k) s = s + partials_[static_cast<std::size_t>(k * tail + c)];
      acc_[o + grouped_ + c] = acc_[o + grouped_ + c] + s;
    }
    if (o + width_ == out_n_) return;  // the last slab
    std::fill(levels_.begin(), levels_.end(), 0.0f);
    std::fill(partial_levels_.begin(), partial_levels_.end(), 0.0f);
    std::fill(partials_.begin(), partials_.end(), 0.0f);
  }

  float* acc_;
  std::int64_t out_n_, rows_, width_;
  std::int64_t grouped_;  ///< columns [0, grouped_) run multi_row_sum, the rest row_sum
  std::int64_t rounds_;   ///< row_sum's rounds of 4 rows
  int power_, round_power_;
  int levels_used_, round_levels_used_;
  std::vector<float> levels_;          ///< per level, one value per grouped column
  std::vector<float> partial_levels_;  ///< per level, per partial, one per row_sum column
  std::vector<float> partials_;        ///< per partial, one per row_sum column
};

}  // namespace

template <typename T>
std::unique_ptr<Reducer> make_reducer(const ReduceLayout& l, T* acc) {
  if constexpr (!std::is_same_v<T, std::int64_t>) {
    if (l.kind == ReduceKind::kAdd) {
      if constexpr (std::is_same_v<T, float>)
        if (l.trailing && l.cascade_sum && (l.out_n > 1 || l.red_n < kAtenParallelGrain))
          return std::make_unique<TrailingSumReducer<float, AtenRowSum<aten_sum::row_sum>>>(l, acc);
      if constexpr (std::is_same_v<T, float>)
        if (l.trailing && l.vec_sum)
          return std::make_unique<
              TrailingSumReducer<float, AtenRowSum<aten_sum::reduce_all_row_sum>>>(l, acc);
      if (l.trailing) return std::make_unique<TrailingSumReducer<T>>(l, acc);
      if constexpr (std::is_same_v<T, float>)
        if (l.columns && l.cascade_sum) return std::make_unique<ColumnSumReducer>(l, acc);
      return std::make_unique<StridedSumReducer<T>>(l, acc);
    }
  }
  return std::make_unique<InOrderReducer<T>>(l, acc);
}

template std::unique_ptr<Reducer> make_reducer<float>(const ReduceLayout&, float*);
template std::unique_ptr<Reducer> make_reducer<double>(const ReduceLayout&, double*);
template std::unique_ptr<Reducer> make_reducer<std::int64_t>(const ReduceLayout&, std::int64_t*);

}  // namespace vtrn::runtime::kernels
