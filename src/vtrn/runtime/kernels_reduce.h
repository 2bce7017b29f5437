// Internal to the executor: the reduce at the root of a fused loop.
//
// A float sum is not accumulated left to right: that loses about one bit per doubling of the
// length (20 million ones sum to 2^24 in float32) where PyTorch's CPU kernel (a cascade sum,
// aten/src/ATen/native/cpu/SumKernel.cpp) stays accurate. Each output's elements, taken in
// their order along the reduced dims, are summed in a fixed tree that depends only on how many
// there are, never on chunks or threads, so a result is the same with fusion on or off and at
// any VTRN_NUM_THREADS:
//
//   * reduced dims trailing (a row sum, a whole-tensor sum; PairwiseSum): blocks of 128
//     elements, each summed in 16 lanes (lane j takes elements j, j+16, ..., one vector add per
//     16 elements) and the lanes summed pairwise; block sums combined pairwise (a binary
//     counter: one partial sum per power of two). An element goes through at most
//     11 + floor(log2(n / 128)) + 1 roundings.
//   * any other layout (a column sum, dims {0, 2} of three; StridedPairwiseSum): blocks of 8
//     consecutive elements of an output summed in order, vectorized across the outputs, and
//     the block sums combined pairwise as above: at most 8 + floor(log2(n / 8)) roundings.
//
// ATen's cascade sums 16..2^(log2(n)/4) elements per level over 4 levels, about 4 n^(1/4)
// roundings (125 at n = 2e7, against 29 here). Accumulators are float32 for float32, bfloat16 and
// float16 values (ATen's acc_type on CPU), float64 for float64. Products, max, min, and/or and
// integer sums are exact or order-free and are combined in order.
//
// A reduce marked cascade_sum (torch.sum and torch.mean over float32) sums each row in ATen's
// order instead (aten_sum.h), where ATen's order does not depend on its threads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "vtrn/hlo/ir.h"

namespace vtrn::runtime::kernels {

/// ATen's GRAIN_SIZE (at::internal::GRAIN_SIZE): the fewest elements its kernels give a thread.
/// A reduction to one output over this many is split between its threads (TensorIterator's
/// two-pass reduction), in an order that depends on their number; an elementwise op over this
/// many is split into ranges, one per thread (at::parallel_for).
inline constexpr std::int64_t kAtenParallelGrain = 32768;

/// How a reduce maps the elements of its operand (the fused loop's domain, row-major) to its
/// outputs.
struct ReduceLayout {
  ReduceLayout() = default;
  /// |domain| is the operand's dims, |reduced| the reduce's dims.
  ReduceLayout(hlo::ReduceKind kind, const std::vector<std::int64_t>& domain,
               const std::vector<std::int64_t>& reduced);

  hlo::ReduceKind kind = hlo::ReduceKind::kAdd;
  std::vector<std::int64_t> domain;
  std::vector<std::int64_t> out_strides;  ///< output stride per domain dim, 0 for reduced dims
  std::int64_t out_n = 0;                 ///< outputs
  std::int64_t red_n = 0;                 ///< elements per output
  /// The reduced dims are the trailing ones (size-1 dims aside): output o reads the |red_n|
  /// consecutive elements from o * red_n.
  bool trailing = false;
  /// The reduce is marked Op::cascade_sum: a float32 sum over trailing dims is taken in ATen's
  /// order for a contiguous row (aten_sum.h), except one output of 2^15 elements or more, which
  /// ATen splits between its threads.
  bool cascade_sum = false;
  /// The reduce is marked Op::vec_sum: a float32 sum over trailing dims is taken in the order of
  /// ATen's vec::reduce_all over a contiguous row (aten_sum::reduce_all_row_sum).
  bool vec_sum = false;
  /// The reduced dims merge into one group with kept dims after it (and maybe before it):
  /// [kept, rows, columns] or [rows, columns]. A float32 sum marked cascade_sum is taken column
  /// by column in ATen's order for it (SumKernel.cpp's vectorized_outer_sum): the rows in turn
  /// through multi_row_sum's 4 levels, which carry every 2^p rows (p = max(4, ceil(log2(rows))
  /// / 4)) into the next, the levels added in order, then the sum added to the init value.
  bool columns = false;
  /// The domain with size-1 dims dropped and neighbours of the same kind (kept or reduced)
  /// merged; for each merged dim its size, output stride and stride in the reduced index.
  std::vector<std::int64_t> merged, merged_out_strides, merged_red_strides;
};

/// The sum of one output's elements, fed in order in pieces of any length: the fixed tree for
/// trailing reduced dims described above. T is float or double.
template <typename T>
class PairwiseSum {
 public:
  static constexpr int kLanes = 16;
  static constexpr int kBlock = 128;

  PairwiseSum() { reset(); }
  void reset();
  void add(const T* x, std::int64_t n);
  /// The sum of everything added since reset(); the tree does not depend on how the elements
  /// were split between add() calls.
  T sum() const;
  /// reset(), add(x, n), sum().
  static T of(const T* x, std::int64_t n);

 private:
  void push(T block_sum);

  T lanes_[kLanes];
  int fill_ = 0;              ///< elements in the current block
  std::uint64_t blocks_ = 0;  ///< complete blocks pushed
  T levels_[64];              ///< levels_[j]: the sum of 2^j blocks, when bit j of blocks_ is set
};

/// Folds a fused loop's values, one chunk at a time, into the reduce's outputs.
class Reducer {
 public:
  virtual ~Reducer() = default;
  /// |values| (of the loop's class) are domain elements [start, start + n). Chunks come in
  /// increasing order; a reducer that covers only some outputs gets all of their elements.
  virtual void add(const void* values, std::int64_t n, std::int64_t start) = 0;
  /// Called once after the last add(): completes the outputs still open.
  virtual void finish() = 0;
};

/// A reducer into |acc| (|layout.out_n| accumulators holding the init value). T is float,
/// double or std::int64_t (the loop's class). With trailing reduced dims, reducers given
/// disjoint ranges of whole outputs may run at once; otherwise one reducer takes every element.
template <typename T>
std::unique_ptr<Reducer> make_reducer(const ReduceLayout& layout, T* acc);

}  // namespace vtrn::runtime::kernels
