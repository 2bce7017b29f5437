// Reductions: sum, nansum, mean, amax/amin, all/any, linalg_vector_norm. Floats accumulate in
// float32 as PyTorch's CPU kernels do; the executor sums in a pairwise tree at least as accurate
// as their cascade sum (runtime/kernels_reduce.h), in a different order, so results agree within
// rounding. Half and bfloat16 results are rounded once, at the end, whatever the input's layout
// (as CUDA does; the CPU's nansum kernel rounds partial sums to half when the input is expanded
// with a stride-0 dim, which loses up to a percent when terms cancel).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "vtrn/compiler/aten_norm.h"
#include "vtrn/runtime/kernels_reduce.h"
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;
using hlo::ReduceKind;

// PyTorch's reductions take a dim mask of 64 bits.
constexpr int kMaxReduceRank = 64;

/// The wrapped dims of argument |i|; PyTorch's errors for a dim out of range, a dim named
/// twice, or a tensor of more than 64 dims come from the CPU.
std::vector<std::int64_t> explicit_dims(Lowerer& L, int i, Value x) {
  if (L.rank(x) > kMaxReduceRank) throw Unsupported("reduction of more than 64 dims");
  std::vector<std::int64_t> dims;
  for (std::int64_t d : L.ints(i)) {
    const std::int64_t w = L.wrap_dim(d, L.rank(x));
    if (std::find(dims.begin(), dims.end(), w) != dims.end())
      throw Unsupported("a dim appears multiple times in the list of dims");
    dims.push_back(w);
  }
  return dims;
}

/// The dims argument |i| (int[1]? / int[]): empty or None means every dim.
std::vector<std::int64_t> reduce_dims(Lowerer& L, int i, Value x) {
  if (L.rank(x) > kMaxReduceRank) throw Unsupported("reduction of more than 64 dims");
  std::vector<std::int64_t> dims;
  if (L.has(i)) dims = explicit_dims(L, i, x);
  if (dims.empty()) {
    dims.resize(static_cast<std::size_t>(L.rank(x)));
    std::iota(dims.begin(), dims.end(), 0);
  }
  if (L.rank(x) == 0) dims.clear();
  return dims;
}

std::int64_t count(Lowerer& L, Value x, const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= L.shape(x)[static_cast<std::size_t>(d)];
  return n;
}

/// sum / mean / nansum (self, dim, keepdim, dtype); nansum counts a NaN as zero.
LowerFn sum_like(bool mean, bool skip_nan = false) {
  return [mean, skip_nan](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    const DType in = L.dtype(x);
    L.require_claimed(in);
    // infer_dtype_from_optional: dtype=, else an out= tensor's dtype, else int64 for integers.
    DType result = L.has(3) ? L.arg(3).dtype
                            : L.given_out_dtype(0).value_or(
                                  (hlo::is_integer(in) || hlo::is_pred(in)) ? DType::kI64 : in);
    result = L.out_dtype(0, result);
    if (mean && !hlo::is_float(result)) throw Unsupported("mean of an integer type");
    const DType acc = hlo::is_float(result) ? opmath(result) : DType::kI64;
    const auto dims = reduce_dims(L, 1, x);
    Value a = L.convert(x, acc);
    if (skip_nan && hlo::is_float(in))
      a = L.b.select(L.b.compare(Comparison::kNE, a, a), L.full_like(a, 0.0), a);
    // ATen's own order where it sums float32 in float32 (its cascade sum of a row).
    const bool cascade = in == DType::kF32 && acc == DType::kF32;
    Value s = L.reduce(a, dims, ReduceKind::kAdd, L.flag(2), cascade);
    if (mean) s = L.b.div(s, L.full_like(s, static_cast<double>(count(L, x, dims))));
    return {L.convert(s, result)};
  };
}

/// amax / amin (self, dim, keepdim).
LowerFn extremum(ReduceKind kind) {
  return [kind](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    L.require_claimed(L.dtype(x));
    if (L.rank(x) > 0) {
      for (std::int64_t d : L.shape(x))
        if (d == 0) throw Unsupported("amax/amin of an empty tensor");  // the CPU raises the error
    }
    const auto dims = reduce_dims(L, 1, x);
    return {L.convert(L.reduce(x, dims, kind, L.flag(2)), L.out_dtype(0, L.dtype(x)))};
  };
}

/// all / any over (self, dim | dims, keepdim) or the whole tensor.
LowerFn all_any(bool all, bool whole) {
  return [all, whole](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    const DType in = L.dtype(x);
    L.require_claimed(in);
    Value p = in == DType::kPred ? x : L.b.compare(Comparison::kNE, x, L.full_like(x, 0.0));
    if (L.rank(x) > kMaxReduceRank) throw Unsupported("reduction of more than 64 dims");
    std::vector<std::int64_t> dims;
    bool keepdim = false;
    if (whole) {
      dims.resize(static_cast<std::size_t>(L.rank(x)));
      std::iota(dims.begin(), dims.end(), 0);
    } else {
      if (L.arg(1).kind == ArgKind::kInt)
        dims = {L.wrap_dim(L.integer(1), L.rank(x))};
      else if (L.has(1))
        dims = explicit_dims(L, 1, x);  // all/any(dim=[]) reduce nothing, unlike sum
      else
        dims = reduce_dims(L, 1, x);
      if (L.rank(x) == 0) dims.clear();
      keepdim = L.flag(2);
    }
    Value r = L.reduce(p, dims, all ? ReduceKind::kAnd : ReduceKind::kOr, keepdim);
    // PyTorch returns uint8 for uint8 input, bool otherwise.
    return {L.convert(r, L.out_dtype(0, in == DType::kU8 ? DType::kU8 : DType::kPred))};
  };
}

/// linalg_vector_norm of order 1 or 2 over dims |dims| of |x| (float32 or bfloat16, the result
/// of the same type) as ATen's CPU kernel sums it (compiler/aten_norm.h); nullopt where ATen
/// splits one output's sum between its threads, which the executor's tree stands in for.
std::optional<Value> aten_norm(Lowerer& L, Value x, const std::vector<std::int64_t>& dims,
                               bool keepdim, int ord) {
  const std::vector<std::int64_t> shape = L.shape(x);
  std::vector<bool> reduced(shape.size(), false);
  for (std::int64_t d : dims) reduced[static_cast<std::size_t>(d)] = true;
  std::vector<std::int64_t> order, out_shape;
  std::int64_t rows = 1, n = 1, last_kept = -1, first_reduced = L.rank(x);
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) continue;
    order.push_back(static_cast<std::int64_t>(d));
    out_shape.push_back(shape[d]);
    rows *= shape[d];
    if (shape[d] > 1) last_kept = static_cast<std::int64_t>(d);
  }
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) continue;
    order.push_back(static_cast<std::int64_t>(d));
    n *= shape[d];
    if (shape[d] > 1) first_reduced = std::min(first_reduced, static_cast<std::int64_t>(d));
  }
  // The reduced dims coalesce into the innermost one (TensorIterator's is_reduce_lastdim).
  const bool last_dim = last_kept < first_reduced;
  compiler::AtenNormConfig config;
  config.ord = ord;
  config.vectorized = ord == 2 && last_dim;
  if (!config.vectorized && rows == 1 && n >= runtime::kernels::kAtenParallelGrain)
    return std::nullopt;
  Value rows_x = L.b.reshape(last_dim ? x : L.b.transpose(x, order), {rows, n});
  Value norms =
      L.b.custom_call(std::string(compiler::kAtenNormTarget), {rows_x},
                      {TensorType(L.dtype(x), {rows})}, compiler::aten_norm_config(config))[0];
  if (keepdim) {
    out_shape.clear();
    for (std::size_t d = 0; d < shape.size(); ++d) out_shape.push_back(reduced[d] ? 1 : shape[d]);
  }
  return L.b.reshape(norms, out_shape);
}

}  // namespace

void add_reduction_lowerings(std::vector<OpLowering>& r) {
  const auto numeric = floats_and_ints();
  std::vector<DType> any_types = all_types();
  add(r, {"sum.dim_IntList", "sum.IntList_out"}, zero_size_ok(entry(any_types, sum_like(false))));
  // Complex inputs are not claimed: the CPU raises "nansum does not support complex inputs".
  add(r, {"nansum", "nansum.out"}, entry(any_types, sum_like(false, true)));
  add(r, {"mean.dim", "mean.out"}, entry(floats(), sum_like(true)));
  add(r, {"amax", "amax.out"}, entry(numeric, extremum(ReduceKind::kMax)));
  add(r, {"amin", "amin.out"}, entry(numeric, extremum(ReduceKind::kMin)));
  add(r, {"all.dim", "all.out", "all.dims", "all.dims_out"},
      entry(any_types, all_any(true, false)));
  add(r, {"any.dim", "any.out", "any.dims", "any.dims_out"},
      entry(any_types, all_any(false, false)));
  add(r, {"all", "all.all_out"}, entry(any_types, all_any(true, true)));
  add(r, {"any", "any.all_out"}, entry(any_types, all_any(false, true)));

  // linalg_vector_norm(self, ord, dim?, keepdim, dtype?): ord is static (it picks the formula).
  OpLowering norm = entry(floats(), [](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    const DType in = L.dtype(x);
    L.require_claimed(in);
    // dtype= may widen, not narrow (the CPU raises).
    if (L.has(4) && promote_types(in, L.arg(4).dtype) != L.arg(4).dtype)
      throw Unsupported("linalg_vector_norm dtype narrower than the input");
    const DType result = L.out_dtype(0, L.has(4) ? L.arg(4).dtype : in);
    if (!hlo::is_float(result)) throw Unsupported("linalg_vector_norm of a non-float result");
    const double ord = L.real(1);
    const auto dims = reduce_dims(L, 2, x);
    const bool keepdim = L.flag(3);
    std::int64_t reduced = 1;
    for (std::int64_t d : dims) reduced *= L.shape(x)[static_cast<std::size_t>(d)];
    if ((ord == 1 || ord == 2) && reduced > 1 && result == in &&
        (in == DType::kF32 || in == DType::kBF16))
      if (std::optional<Value> n = aten_norm(L, x, dims, keepdim, static_cast<int>(ord)))
        return {*n};
    const Value xc = L.convert(x, opmath(result));
    const Value a = L.b.unary(OpKind::kAbs, xc);  // (left out of the module where unread)
    Value n;
    if (reduced == 1 && ord != 0) {
      // One element per output: the CPU returns |x| without the power and root, so
      // vector_norm([2e20]) is 2e20, not the overflowed inf.
      n = L.reduce(a, dims, ReduceKind::kMax, keepdim);
    } else if (std::isinf(ord)) {
      for (std::int64_t d : dims)
        if (L.shape(x)[static_cast<std::size_t>(d)] == 0)
          throw Unsupported("inf-norm of an empty dimension");
      n = L.reduce(a, dims, ord > 0 ? ReduceKind::kMax : ReduceKind::kMin, keepdim);
    } else if (ord == 0) {
      Value nz = L.convert(L.b.compare(Comparison::kNE, a, L.full_like(a, 0.0)), L.dtype(a));
      n = L.reduce(nz, dims, ReduceKind::kAdd, keepdim);
    } else if (ord == 1) {
      n = L.reduce(a, dims, ReduceKind::kAdd, keepdim);
    } else if (ord == 2) {
      // x * x is |x| * |x|, without a pass over the tensor for |x| (clip_grad_norm_'s
      // _foreach_norm reads every parameter's gradient).
      n = L.b.unary(OpKind::kSqrt, L.reduce(L.b.mul(xc, xc), dims, ReduceKind::kAdd, keepdim));
    } else {
      Value p = L.b.binary(OpKind::kPower, a, L.full_like(a, ord));
      Value s = L.reduce(p, dims, ReduceKind::kAdd, keepdim);
      n = L.b.binary(OpKind::kPower, s, L.full_like(s, 1.0 / ord));
    }
    return {L.convert(n, result)};
  });
  norm.static_scalars = {1};
  add(r, {"linalg_vector_norm", "linalg_vector_norm.out"}, norm);
}

}  // namespace vtrn::lowering
