// Ops that count, place elements by a mask or reduce them into positions: count_nonzero,
// nonzero_static, masked_scatter_ and scatter_reduce.
//
// A mask's true elements are numbered by an inclusive prefix sum over the flattened mask (in
// row-major order, the order of the CPU's loops): element i is the (count(i) - 1)-th selected
// one. nonzero_static scatters each selected element's coordinates to its number (numbers at
// or beyond |size| are dropped, as the CPU drops them, and the rest of the rows keep
// fill_value); masked_scatter_ gathers source element count(i) - 1 for each selected element.
// Their sizes are static: nonzero, masked_select and boolean indexing (torch/mask_kernels.cpp)
// read the count first, as a device must, then call these.
//
// scatter_reduce applies its reduction in index order, rounding each step to the operand's
// type, as the CPU's serial loop does; include_self=False first overwrites every target with
// the reduction's identity; mean divides by the count (1 + the count with include_self),
// floor-dividing integers.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;
using hlo::ScatterKind;

using Shape = std::vector<std::int64_t>;

std::int64_t numel(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
}

/// The flattened |mask| as pred, and the number (from 0) of each true element among the true
/// ones (int64; meaningless where the mask is false).
std::pair<Value, Value> numbered(Lowerer& L, Value mask) {
  const std::int64_t n = numel(L.shape(mask));
  Value m = L.b.reshape(mask, {n});
  if (L.dtype(m) != DType::kPred) m = L.b.compare(Comparison::kNE, m, L.full_like(m, 0.0));
  Value count = prefix_scan(L, L.convert(m, DType::kI64), 0, OpKind::kAdd);
  return {m, L.b.sub(count, L.full_like(count, 1.0))};
}

/// nonzero_static(self, *, size, fill_value): the coordinates of the first |size| nonzero
/// elements of |self|, rows past the count filled with |fill_value|.
std::vector<Value> nonzero_static(Lowerer& L) {
  Value x = L.tensor(0);
  L.require_claimed(L.dtype(x));
  const std::int64_t size = L.integer(1);
  if (size < 0) throw Unsupported("nonzero_static: 'size' must be an non-negative integer");
  const double fill = static_cast<double>(L.integer(2));
  const Shape s = L.shape(x);
  const std::int64_t r = static_cast<std::int64_t>(s.size()), n = numel(s);
  Value out = L.b.broadcast_to(L.constant(fill, DType::kI64), {size, r});
  if (r == 0 || n == 0 || size == 0) return {L.convert(out, L.out_dtype(0, DType::kI64))};
  auto [m, pos] = numbered(L, x);
  Value keep =
      L.b.binary(OpKind::kAnd, m,
                 L.b.compare(Comparison::kLT, pos, L.full_like(pos, static_cast<double>(size))));
  pos = L.b.select(keep, pos, L.full_like(pos, static_cast<double>(size)));  // dropped
  std::vector<Value> coords;
  for (std::int64_t k = 0; k < r; ++k)
    coords.push_back(L.b.reshape(L.b.iota(TensorType(DType::kI64, s), k), {n, 1}));
  Value upd = coords.size() == 1 ? coords[0] : L.b.concatenate(coords, 1);
  hlo::ScatterDims d;
  d.update_window_dims = {1};
  d.inserted_window_dims = {0};
  d.scatter_dims_to_operand_dims = {0};
  d.index_vector_dim = 1;
  out = L.b.scatter(out, L.b.reshape(pos, {n, 1}), upd, d, ScatterKind::kReplace);
  return {L.convert(out, L.out_dtype(0, DType::kI64))};
}

/// count_nonzero.dim_IntList(self, dim): the nonzero elements over |dim| (all when empty), as
/// int64. What the data-dependent kernels count before sizing their result.
std::vector<Value> count_nonzero(Lowerer& L) {
  Value x = L.tensor(0);
  L.require_claimed(L.dtype(x));
  const int r = L.rank(x);
  std::vector<std::int64_t> dims;
  for (std::int64_t d : L.ints(1)) dims.push_back(L.wrap_dim(d, std::max(r, 1)));
  std::vector<std::int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw Unsupported("count_nonzero: a dim appears more than once");
  if (dims.empty() || r == 0) {
    dims.clear();
    for (int d = 0; d < r; ++d) dims.push_back(d);
  }
  Value nz = x;
  if (L.dtype(nz) != DType::kPred) nz = L.b.compare(Comparison::kNE, nz, L.full_like(nz, 0.0));
  if (r == 0) return {L.convert(nz, L.out_dtype(0, DType::kI64))};
  Value count = L.reduce(L.convert(nz, DType::kI64), dims, hlo::ReduceKind::kAdd, false);
  return {L.convert(count, L.out_dtype(0, DType::kI64))};
}

/// masked_scatter_(self, mask, source): self's elements where the (broadcast) mask is true
/// take source's elements in order.
std::vector<Value> masked_scatter(Lowerer& L) {
  Value self = L.tensor(0), mask = L.tensor(1), source = L.tensor(2);
  const DType d = L.dtype(self);
  L.require_claimed(d);
  if (L.dtype(mask) != DType::kPred) throw Unsupported("masked_scatter_ takes a boolean mask");
  if (L.dtype(source) != d) throw Unsupported("masked_scatter_: source of another dtype");
  const Shape s = L.shape(self), ms = L.shape(mask);
  // The mask broadcasts to self (the CPU raises otherwise).
  if (ms.size() > s.size()) throw Unsupported("masked_scatter_: mask of a higher rank");
  for (std::size_t i = 1; i <= ms.size(); ++i)
    if (ms[ms.size() - i] != 1 && ms[ms.size() - i] != s[s.size() - i])
      throw Unsupported("masked_scatter_: mask does not broadcast to self");
  const std::int64_t n = numel(s), src_n = numel(L.shape(source));
  if (n == 0) return {self};
  // Too few source elements for the mask is an error only the count can show: the CPU decides.
  if (src_n == 0) throw Unsupported("masked_scatter_ with an empty source");
  auto [m, pos] = numbered(L, L.broadcast_to(mask, s));
  pos = L.b.clamp(L.constant(0, DType::kI64), pos,
                  L.constant(static_cast<double>(src_n - 1), DType::kI64));
  hlo::GatherDims g;
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 1;
  Value picked = L.b.gather(L.b.reshape(source, {src_n}), L.b.reshape(pos, {n, 1}), g, {1});
  return {L.b.reshape(L.b.select(m, picked, L.b.reshape(self, {n})), s)};
}

/// The identity of a scatter_reduce reduction over |d|, exactly.
Value reduction_identity(Lowerer& L, const std::string& reduce, DType d) {
  if (reduce == "prod") return L.constant(1, d);
  if (reduce != "amax" && reduce != "amin") return L.constant(0, d);
  const bool lowest = reduce == "amax";
  if (hlo::is_float(d)) return L.constant(lowest ? -INFINITY : INFINITY, d);
  // Integer limits: int64's highest does not survive a double, but its lowest (-2^63) does, and
  // the highest is its complement (two's complement), as an unsigned type's is 0's.
  const int bits = hlo::dtype_size(d) * 8;
  Value min = hlo::is_unsigned(d) ? L.constant(0, d) : L.constant(-std::ldexp(1.0, bits - 1), d);
  return lowest ? min : L.b.unary(OpKind::kNot, min);
}

/// scatter_reduce.two(self, dim, index, src, reduce, *, include_self).
std::vector<Value> scatter_reduce(Lowerer& L) {
  Value self = L.tensor(0), index = L.tensor(2), src = L.tensor(3);
  const DType d = L.dtype(self);
  L.require_claimed(d);
  const std::string reduce = L.arg(4).text;
  const bool include_self = L.flag(5);
  ScatterKind kind;
  if (reduce == "sum" || reduce == "mean")
    kind = ScatterKind::kAdd;
  else if (reduce == "prod")
    kind = ScatterKind::kMul;
  else if (reduce == "amax")
    kind = ScatterKind::kMax;
  else if (reduce == "amin")
    kind = ScatterKind::kMin;
  else
    throw Unsupported("scatter_reduce: reduce argument must be one of sum, prod, mean, amax, amin");
  if (L.dtype(src) != d) throw Unsupported("scatter_reduce: src of another dtype");
  if (!hlo::is_integer(L.dtype(index)) || L.dtype(index) != DType::kI64)
    throw Unsupported("scatter_reduce: index must be int64");
  Shape ss = L.shape(self), is = L.shape(index), srcs = L.shape(src);
  if (numel(is) == 0) return {L.convert(self, L.out_dtype(0, d))};
  std::int64_t dim = L.wrap_dim(L.integer(1), std::max(L.rank(self), 1));
  const bool scalar = ss.empty();
  if (scalar) {  // a 0-d self takes a 0-d or one-element index and src: one position
    if (numel(is) != 1 || numel(srcs) < 1) throw Unsupported("scatter_reduce into a 0-d tensor");
    self = L.b.reshape(self, {1});
    index = L.b.reshape(index, {1});
    src = L.b.slice(L.b.reshape(src, {numel(srcs)}), {0}, {1});
    ss = is = srcs = {1};
    dim = 0;
  }
  if (is.size() != ss.size() || srcs.size() != ss.size())
    throw Unsupported("scatter_reduce: ranks differ");
  for (std::size_t k = 0; k < is.size(); ++k) {
    if (is[k] > srcs[k]) throw Unsupported("scatter_reduce: index is larger than src");
    if (static_cast<std::int64_t>(k) != dim && is[k] > ss[k])
      throw Unsupported("scatter_reduce: index is larger than self outside the dimension");
  }
  const int r = L.rank(self);
  hlo::ScatterDims sd;
  for (int k = 0; k < r; ++k) sd.inserted_window_dims.push_back(k);
  sd.scatter_dims_to_operand_dims = sd.inserted_window_dims;
  sd.index_vector_dim = r;
  Value idx = full_indices(L, index, dim);
  Value updates = L.b.slice(src, Shape(is.size(), 0), is);
  Value base = self;
  if (!include_self)
    base = L.b.scatter(self, idx, L.b.broadcast_to(reduction_identity(L, reduce, d), is), sd,
                       ScatterKind::kReplace);
  Value out = L.b.scatter(base, idx, updates, sd, kind);
  if (reduce == "mean") {
    Value count = L.b.broadcast_to(L.constant(include_self ? 1 : 0, d), ss);
    count = L.b.scatter(count, idx, L.b.broadcast_to(L.constant(1, d), is), sd, ScatterKind::kAdd);
    count = L.b.select(L.b.compare(Comparison::kEQ, count, L.full_like(count, 0.0)),
                       L.full_like(count, 1.0), count);
    if (hlo::is_float(d)) {
      const DType c = opmath(d);
      out = L.convert(L.b.div(L.convert(out, c), L.convert(count, c)), d);
    } else {  // floor division by a positive count
      Value q = L.b.div(out, count);
      Value rem = L.b.sub(out, L.b.mul(q, count));
      out = L.b.select(L.b.compare(Comparison::kLT, rem, L.full_like(rem, 0.0)),
                       L.b.sub(q, L.full_like(q, 1.0)), q);
    }
  }
  if (scalar) out = L.b.reshape(out, {});
  return {L.convert(out, L.out_dtype(0, d))};
}

}  // namespace

void add_mask_lowerings(std::vector<OpLowering>& r) {
  add(r, {"nonzero_static", "nonzero_static.out"},
      zero_size_ok(entry(all_types(), nonzero_static)));
  add(r, {"count_nonzero.dim_IntList", "count_nonzero.dim_IntList_out"},
      zero_size_ok(entry(all_types(), count_nonzero)));
  add(r, {"masked_scatter_"}, zero_size_ok(entry(all_types(), masked_scatter)));
  add(r, {"scatter_reduce.two", "scatter_reduce_.two", "scatter_reduce.two_out"},
      zero_size_ok(entry(floats_and_ints(), scatter_reduce)));
}

}  // namespace vtrn::lowering
