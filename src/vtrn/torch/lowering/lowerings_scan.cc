// Ops that compare or accumulate along a dimension: argmax/argmin, max/min with indices,
// cumsum/cumprod, sort, topk and isin.
//
// Ties and NaN follow the CPU kernels: argmax/argmin and max/min.dim give the first index of the
// extreme value, and a NaN counts as the extreme (the first NaN wins); sort is stable and puts
// NaN last ascending and first descending; topk is a sort cut to k. The scans accumulate in the
// CPU's accumulate type (double for float32, float for the half types, int64 for integers) in
// a log-depth prefix tree, so floating sums agree with the CPU's sequential ones within rounding.
// A reduction over an empty dimension, which the CPU rejects, is left to the CPU fallback.
#include <cmath>
#include <numeric>

#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;
using hlo::ReduceKind;

std::vector<std::int64_t> dims_without(std::vector<std::int64_t> s, std::int64_t d) {
  s.erase(s.begin() + d);
  return s;
}

struct ArgResult {
  Value values, indices;  // the reduced dim removed
};

/// The extreme value of |x| along |dim| and the first index holding it (NaN the extreme).
ArgResult arg_extreme(Lowerer& L, Value x, std::int64_t dim, bool is_max) {
  const auto s = L.shape(x);
  const std::int64_t n = s[static_cast<std::size_t>(dim)];
  if (n == 0) throw Unsupported(L.entry.name + " over an empty dimension");
  if (L.dtype(x) == DType::kPred) x = L.convert(x, DType::kU8);
  const DType d = L.dtype(x);
  const auto rs = dims_without(s, dim);
  Value m = L.reduce(x, {dim}, is_max ? ReduceKind::kMax : ReduceKind::kMin, false);
  std::vector<std::int64_t> keep_dims;
  for (std::int64_t k = 0; k < L.rank(x); ++k)
    if (k != dim) keep_dims.push_back(k);
  Value mb = L.b.broadcast_in_dim(m, s, keep_dims);
  Value target = L.b.compare(Comparison::kEQ, x, mb);
  if (hlo::is_float(d)) {
    Value nan = L.b.compare(Comparison::kNE, x, x);
    Value any_nan = L.reduce(nan, {dim}, ReduceKind::kOr, false);
    target = L.b.select(L.b.broadcast_in_dim(any_nan, s, keep_dims), nan, target);
    m = L.b.select(any_nan, L.b.broadcast_to(L.constant(NAN, d), rs), m);
  }
  TensorType it(DType::kI64, s);
  Value idx = L.b.select(target, L.b.iota(it, dim),
                         L.b.broadcast_to(L.constant(static_cast<double>(n), DType::kI64), s));
  return {m, L.reduce(idx, {dim}, ReduceKind::kMin, false)};
}

/// argmax / argmin (self, dim?, keepdim).
LowerFn arg_op(bool is_max) {
  return [is_max](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    L.require_claimed(L.dtype(x));
    const auto s = L.shape(x);
    const bool keepdim = L.flag(2);
    if (!L.has(1) || L.rank(x) == 0) {
      const std::int64_t n = TensorType(L.dtype(x), s).num_elements();
      if (n == 0) throw Unsupported(L.entry.name + " of an empty tensor");
      ArgResult a = arg_extreme(L, L.b.reshape(x, {n}), 0, is_max);
      std::vector<std::int64_t> out_shape;
      if (keepdim) out_shape.assign(s.size(), 1);
      return {L.convert(L.b.reshape(a.indices, out_shape), L.out_dtype(0, DType::kI64))};
    }
    // The CPU's reduction takes a 64-bit dim mask: it refuses more dims with its own error.
    if (L.rank(x) > 64) throw Unsupported(L.entry.name + " over more than 64 dims");
    const std::int64_t dim = L.wrap_dim(L.integer(1), L.rank(x));
    ArgResult a = arg_extreme(L, x, dim, is_max);
    Value idx = a.indices;
    if (keepdim) {
      auto ks = s;
      ks[static_cast<std::size_t>(dim)] = 1;
      idx = L.b.reshape(idx, ks);
    }
    return {L.convert(idx, L.out_dtype(0, DType::kI64))};
  };
}

/// max.dim / min.dim (self, dim, keepdim) -> (values, indices).
LowerFn extreme_dim(bool is_max) {
  return [is_max](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    const DType d = L.dtype(x);
    L.require_claimed(d);
    if (L.rank(x) == 0) {
      return {L.convert(x, L.out_dtype(0, d)),
              L.convert(L.constant(0, DType::kI64), L.out_dtype(1, DType::kI64))};
    }
    const std::int64_t dim = L.wrap_dim(L.integer(1), L.rank(x));
    ArgResult a = arg_extreme(L, x, dim, is_max);
    Value v = L.convert(a.values, d), idx = a.indices;
    if (L.flag(2)) {
      auto ks = L.shape(x);
      ks[static_cast<std::size_t>(dim)] = 1;
      v = L.b.reshape(v, ks);
      idx = L.b.reshape(idx, ks);
    }
    return {L.convert(v, L.out_dtype(0, d)), L.convert(idx, L.out_dtype(1, DType::kI64))};
  };
}

/// max / min of the whole tensor (NaN propagates).
LowerFn extreme_all(bool is_max) {
  return [is_max](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    const DType d = L.dtype(x);
    L.require_claimed(d);
    const std::int64_t n = TensorType(d, L.shape(x)).num_elements();
    if (n == 0) throw Unsupported(L.entry.name + " of an empty tensor");
    ArgResult a = arg_extreme(L, L.b.reshape(x, {n}), 0, is_max);
    return {L.convert(L.convert(a.values, d), L.out_dtype(0, d))};
  };
}

/// cumsum / cumprod (self, dim, dtype?).
LowerFn scan(OpKind kind) {
  return [kind](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    const DType in = L.dtype(x);
    L.require_claimed(in);
    DType result = L.has(2) ? L.arg(2).dtype : (hlo::is_float(in) ? in : DType::kI64);
    result = L.out_dtype(0, result);
    if (!hlo::is_float(result) && !hlo::is_integer(result))
      throw Unsupported(L.entry.name + " to " + torch_dtype_name(result));
    const DType acc =
        hlo::is_float(result) ? (result == DType::kF32 ? DType::kF64 : DType::kF32) : DType::kI64;
    if (L.rank(x) == 0) return {L.convert(x, result)};
    const std::int64_t dim = L.wrap_dim(L.integer(1), L.rank(x));
    // The CPU converts to the result type before accumulating.
    Value v = L.convert(L.convert(x, result), acc);
    return {L.convert(prefix_scan(L, v, dim, kind), result)};
  };
}

/// Sorts |x| along |dim| with the indices; returns {values, indices}.
std::vector<Value> sort_with_indices(Lowerer& L, Value x, std::int64_t dim, bool descending,
                                     bool stable) {
  // (A bool key stays bool: the executor sorts a 1-D ascending integer one of 32768 elements or
  // more stably, as ATen's radix sort does, and ATen's bool sort is no radix sort.)
  Value idx = L.b.iota(TensorType(DType::kI64, L.shape(x)), dim);
  std::vector<Value> sorted = L.b.sort({x, idx}, dim, 0, descending, stable);
  return {sorted[0], sorted[1]};
}

/// sort(self, dim, descending) / sort.stable(self, *, stable, dim, descending). Unstable unless
/// stable=True: the executor then orders equal keys as the CPU's sort does.
LowerFn sort_op(bool with_stable) {
  return [with_stable](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    const DType d = L.dtype(x);
    L.require_claimed(d);
    const int dim_arg = with_stable ? 2 : 1, desc_arg = with_stable ? 3 : 2;
    if (L.rank(x) == 0)
      return {L.convert(x, L.out_dtype(0, d)),
              L.convert(L.constant(0, DType::kI64), L.out_dtype(1, DType::kI64))};
    const std::int64_t dim = L.wrap_dim(L.integer(dim_arg), L.rank(x));
    const bool stable = with_stable && L.has(1) && L.flag(1);
    auto r = sort_with_indices(L, x, dim, L.flag(desc_arg), stable);
    return {L.convert(r[0], L.out_dtype(0, d)), L.convert(r[1], L.out_dtype(1, DType::kI64))};
  };
}

/// topk(self, k, dim, largest, sorted): the first k of a stable sort. sorted=False promises no
/// order (the CPU's is whatever its selection algorithm leaves, CUDA's another); the same k
/// elements in sorted order are one of the answers it allows.
std::vector<Value> topk(Lowerer& L) {
  Value x = L.tensor(0);
  const DType d = L.dtype(x);
  L.require_claimed(d);
  if (d == DType::kPred) throw Unsupported("topk of bool");  // the CPU raises; its fallback too
  const std::int64_t k = L.integer(1);
  const int r = L.rank(x);
  const std::int64_t dim = L.wrap_dim(L.integer(2), r);
  const std::int64_t n = r == 0 ? 1 : L.shape(x)[static_cast<std::size_t>(dim)];
  if (k < 0 || k > n) throw Unsupported("topk: selected index k out of range");
  if (r == 0)
    return {L.convert(x, L.out_dtype(0, d)),
            L.convert(L.constant(0, DType::kI64), L.out_dtype(1, DType::kI64))};
  auto sorted = sort_with_indices(L, x, dim, L.flag(3), /*stable=*/true);
  std::vector<std::int64_t> start(static_cast<std::size_t>(r), 0), limit = L.shape(x);
  limit[static_cast<std::size_t>(dim)] = k;
  return {L.convert(L.b.slice(sorted[0], start, limit), L.out_dtype(0, d)),
          L.convert(L.b.slice(sorted[1], start, limit), L.out_dtype(1, DType::kI64))};
}

/// isin(elements, test_elements, *, assume_unique, invert): each element against every test.
std::vector<Value> isin(Lowerer& L) {
  const DType common = result_type({L.promotion(0), L.promotion(1)});
  L.require_claimed(common);
  Value e = L.convert(L.tensor(0), common), t = L.convert(L.tensor(1), common);
  const auto es = L.shape(e);
  const std::int64_t n = TensorType(common, es).num_elements();
  const std::int64_t m = TensorType(common, L.shape(t)).num_elements();
  Value ef = L.b.broadcast_in_dim(L.b.reshape(e, {n}), {n, m}, {0});
  Value tf = L.b.broadcast_in_dim(L.b.reshape(t, {m}), {n, m}, {1});
  Value hit = L.reduce(L.b.compare(Comparison::kEQ, ef, tf), {1}, ReduceKind::kOr, false);
  if (L.flag(3)) hit = L.b.unary(OpKind::kNot, hit);
  return {L.convert(L.b.reshape(hit, es), L.out_dtype(0, DType::kPred))};
}

}  // namespace

void add_scan_lowerings(std::vector<OpLowering>& r) {
  const auto any = all_types();
  add(r, {"argmax", "argmax.out"}, zero_size_ok(entry(floats_and_ints(), arg_op(true))));
  add(r, {"argmin", "argmin.out"}, zero_size_ok(entry(floats_and_ints(), arg_op(false))));
  add(r, {"max.dim", "max.dim_max"}, zero_size_ok(entry(any, extreme_dim(true))));
  add(r, {"min.dim", "min.dim_min"}, zero_size_ok(entry(any, extreme_dim(false))));
  add(r, {"max", "max.unary_out"}, zero_size_ok(entry(any, extreme_all(true))));
  add(r, {"min", "min.unary_out"}, zero_size_ok(entry(any, extreme_all(false))));
  add(r, {"cumsum", "cumsum_", "cumsum.out"}, zero_size_ok(entry(any, scan(OpKind::kAdd))));
  add(r, {"cumprod", "cumprod_", "cumprod.out"}, zero_size_ok(entry(any, scan(OpKind::kMultiply))));
  // float16/bfloat16 are left to the CPU: their many ties make the order the CPU's unstable
  // sort happens to give (and so where the backward sends the gradient) observable.
  std::vector<DType> sortable = integers();
  sortable.push_back(DType::kF32);
  sortable.push_back(DType::kPred);
  add(r, {"sort", "sort.values"}, zero_size_ok(entry(sortable, sort_op(false))));
  add(r, {"sort.stable", "sort.values_stable"}, zero_size_ok(entry(sortable, sort_op(true))));
  add(r, {"topk", "topk.values"}, zero_size_ok(entry(sortable, topk)));
  add(r,
      {"isin.Tensor_Tensor", "isin.Tensor_Tensor_out", "isin.Tensor_Scalar",
       "isin.Tensor_Scalar_out", "isin.Scalar_Tensor", "isin.Scalar_Tensor_out"},
      zero_size_ok(entry(floats_and_ints(), isin)));
}

}  // namespace vtrn::lowering
