// Indexing that reads or writes through an index tensor: gather, scatter (reduce= too)/scatter_add,
// index_add, advanced indexing (index.Tensor, index_put_) and histc.
//
// Each builds one stablehlo.gather or stablehlo.scatter whose index vectors name every operand
// dimension. Updates apply in index order, as the CPU's serial loops do (for scatter, the last
// write to an element wins; for an accumulating one, each sum is rounded to the operand's type).
// Negative indices of advanced indexing wrap. An out-of-range index raises on the CPU; here, as
// on an accelerator, it cannot be seen without reading the index back, so gather clamps it and
// scatter drops the update (XLA semantics). A boolean mask index needs its number of true
// elements, so it is left to the CPU fallback, except for a mask that selects with one value.
#include <numeric>

#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;
using hlo::ReduceKind;
using hlo::ScatterKind;

using Shape = std::vector<std::int64_t>;

std::vector<std::int64_t> range(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

void check_index(Lowerer& L, Value self, Value index) {
  if (!hlo::is_integer(L.dtype(index)))
    throw Unsupported(L.entry.name + ": index must be an integer tensor");
  if (L.rank(index) != L.rank(self) && !(L.rank(self) == 0 && L.rank(index) <= 1))
    throw Unsupported(L.entry.name + ": index and self must have the same number of dimensions");
}

/// gather of |self| (rank >= 1) along |dim| (wrapped) at |index|.
Value gather_along(Lowerer& L, Value self, Value index, std::int64_t dim) {
  const DType d = L.dtype(self);
  const Shape is = L.shape(index), ss = L.shape(self);
  for (std::size_t k = 0; k < is.size(); ++k)
    if (static_cast<std::int64_t>(k) != dim && is[k] > ss[k])
      throw Unsupported("gather: index is larger than self outside the gather dimension");
  if (TensorType(d, is).num_elements() == 0) return L.b.broadcast_to(L.constant(0, d), is);
  if (ss[static_cast<std::size_t>(dim)] == 0) throw Unsupported("gather from an empty dimension");
  const int r = L.rank(self);
  hlo::GatherDims g;
  g.collapsed_slice_dims = range(r);
  g.start_index_map = range(r);
  g.index_vector_dim = r;
  return L.b.gather(self, full_indices(L, index, dim), g, Shape(static_cast<std::size_t>(r), 1));
}

/// gather(self, dim, index, *, sparse_grad). A complex64 self (float32 pairs [..., 2]) gathers
/// both parts at the same index: the index gains the pair dim.
std::vector<Value> gather(Lowerer& L) {
  Value self = L.tensor(0), index = L.tensor(2);
  if (L.is_complex(0)) {
    const int r = L.rank(self) - 1;
    if (r == 0 || L.rank(index) != r) throw Unsupported("gather of a complex64 scalar");
    if (!hlo::is_integer(L.dtype(index))) throw Unsupported("gather: index must be integer");
    Shape is = L.shape(index);
    is.push_back(2);
    Value pair_index = L.b.broadcast_in_dim(index, is, range(r));
    return {L.as_complex_result(gather_along(L, self, pair_index, L.wrap_dim(L.integer(1), r)))};
  }
  const DType d = L.dtype(self);
  L.require_claimed(d);
  check_index(L, self, index);
  if (L.rank(self) == 0) {
    return {L.convert(L.b.reshape(self, L.shape(index)), L.out_dtype(0, d))};
  }
  const std::int64_t dim = L.wrap_dim(L.integer(1), L.rank(self));
  return {L.convert(gather_along(L, self, index, dim), L.out_dtype(0, d))};
}

/// scatter(self, dim, index, src | value) and scatter_add(self, dim, index, src).
LowerFn scatter(ScatterKind base_kind, bool value) {
  return [base_kind, value](Lowerer& L) -> std::vector<Value> {
    Value self = L.tensor(0), index = L.tensor(2);
    const DType d = L.dtype(self);
    L.require_claimed(d);
    check_index(L, self, index);
    // The deprecated reduce= ("add" or "multiply") applies in index order, as scatter_reduce.
    ScatterKind kind = base_kind;
    if (L.call.args.size() > 4 && L.has(4)) {
      const std::string& reduce = L.arg(4).text;
      if (reduce == "add")
        kind = ScatterKind::kAdd;
      else if (reduce == "multiply")
        kind = ScatterKind::kMul;
      else
        throw Unsupported("scatter: reduce argument must be either add or multiply");
    }
    const Shape is = L.shape(index), ss = L.shape(self);
    const std::int64_t n = TensorType(d, is).num_elements();
    if (n == 0) return {L.convert(self, L.out_dtype(0, d))};
    if (L.rank(self) == 0) {
      // One element, written (or added) when the index is 0; another index is dropped.
      if (n > 1) throw Unsupported("scatter of several elements into a 0-d tensor");
      L.wrap_dim(L.integer(1), 1);
      Value upd;
      if (value) {
        upd = L.scalar(3, d);
      } else {
        Value src = L.tensor(3);
        const std::int64_t m = TensorType(d, L.shape(src)).num_elements();
        if (m == 0) throw Unsupported("scatter from an empty src");
        upd = L.convert(L.b.reshape(L.b.slice(L.b.reshape(src, {m}), {0}, {1}), {}), d);
      }
      if (kind == ScatterKind::kAdd)
        upd = d == DType::kPred ? L.b.binary(OpKind::kOr, self, upd) : L.b.add(self, upd);
      if (kind == ScatterKind::kMul)
        upd = d == DType::kPred ? L.b.binary(OpKind::kAnd, self, upd) : L.b.mul(self, upd);
      Value i = L.convert(L.b.reshape(index, {}), DType::kI64);
      Value hit = L.b.compare(Comparison::kEQ, i, L.constant(0, DType::kI64));
      return {L.convert(L.b.select(hit, upd, self), L.out_dtype(0, d))};
    }
    const std::int64_t dim = L.wrap_dim(L.integer(1), L.rank(self));
    Value updates;
    if (value) {
      updates = L.b.broadcast_to(L.scalar(3, d), is);
    } else {
      Value src = L.tensor(3);
      if (L.rank(src) != L.rank(self)) throw Unsupported("scatter: src rank");
      const Shape srcs = L.shape(src);
      for (std::size_t k = 0; k < is.size(); ++k) {
        if (is[k] > srcs[k]) throw Unsupported("scatter: index is larger than src");
        if (static_cast<std::int64_t>(k) != dim && is[k] > ss[k])
          throw Unsupported("scatter: index is larger than self outside the scatter dimension");
      }
      updates = L.convert(L.b.slice(src, Shape(is.size(), 0), is), d);
    }
    const int r = L.rank(self);
    hlo::ScatterDims s;
    s.inserted_window_dims = range(r);
    s.scatter_dims_to_operand_dims = range(r);
    s.index_vector_dim = r;
    Value out = L.b.scatter(self, full_indices(L, index, dim), updates, s, kind);
    return {L.convert(out, L.out_dtype(0, d))};
  };
}

/// index_add(self, dim, index, source, *, alpha): self[.., index[i], ..] += alpha * source[.., i,
/// ..].
std::vector<Value> index_add(Lowerer& L) {
  Value self = L.tensor(0), index = L.tensor(2), source = L.tensor(3);
  const DType d = L.dtype(self);
  L.require_claimed(d);
  if (L.rank(index) > 1 || !hlo::is_integer(L.dtype(index)))
    throw Unsupported("index_add: index must be a 1-d integer tensor");
  const std::int64_t n = L.rank(index) == 0 ? 1 : L.shape(index)[0];
  if (L.rank(self) == 0 || L.rank(source) != L.rank(self)) throw Unsupported("index_add ranks");
  const std::int64_t dim = L.wrap_dim(L.integer(1), L.rank(self));
  if (n == 0) return {L.convert(self, L.out_dtype(0, d))};
  Value src = L.convert(source, d);
  if (L.has(4)) src = L.b.mul(src, L.b.broadcast_to(L.scalar(4, d), L.shape(src)));
  hlo::ScatterDims s;
  for (std::int64_t k = 0; k < L.rank(self); ++k)
    if (k != dim) s.update_window_dims.push_back(k);
  s.inserted_window_dims = {dim};
  s.scatter_dims_to_operand_dims = {dim};
  s.index_vector_dim = 1;
  Value idx = L.b.reshape(L.convert(index, DType::kI64), {n, 1});
  Value out = L.b.scatter(self, idx, src, s, ScatterKind::kAdd);
  return {L.convert(out, L.out_dtype(0, d))};
}

/// An advanced index: the indexed dims, the broadcast index vectors [B..., k] (negative indices
/// wrapped), and the result's layout.
struct Advanced {
  std::vector<std::int64_t> dims;  // operand dims indexed, in order
  Value vectors;                   // B + [k]
  Shape batch;                     // B
  bool adjacent = true;            // indexed dims are consecutive: B replaces them in place
};

Advanced advanced_index(Lowerer& L, Value self, int arg) {
  const ArgSpec& a = L.arg(arg);
  const auto& values = L.values(arg);
  const Shape ss = L.shape(self);
  Advanced adv;
  std::vector<Value> idx;
  std::size_t next = 0;
  for (std::size_t p = 0; p < a.ints.size(); ++p) {
    if (a.ints[p] == 0) continue;
    Value v = values.at(next++);
    if (!hlo::is_integer(L.dtype(v)) || L.dtype(v) == DType::kU8)
      throw Unsupported("advanced indexing with a boolean mask");
    if (p >= ss.size()) throw Unsupported("too many indices for tensor");
    adv.dims.push_back(static_cast<std::int64_t>(p));
    idx.push_back(L.convert(v, DType::kI64));
  }
  if (idx.empty()) throw Unsupported("advanced indexing without an index tensor");
  for (std::size_t k = 1; k < adv.dims.size(); ++k)
    adv.adjacent = adv.adjacent && adv.dims[k] == adv.dims[k - 1] + 1;
  idx = L.broadcast(idx);
  adv.batch = L.shape(idx[0]);
  Shape s1 = adv.batch;
  s1.push_back(1);
  std::vector<Value> parts;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    Value v = idx[k];
    Value size = L.full_like(v, static_cast<double>(ss[static_cast<std::size_t>(adv.dims[k])]));
    v = L.b.select(L.b.compare(Comparison::kLT, v, L.full_like(v, 0.0)), L.b.add(v, size), v);
    parts.push_back(L.b.reshape(v, s1));
  }
  adv.vectors = parts.size() == 1
                    ? parts[0]
                    : L.b.concatenate(parts, static_cast<std::int64_t>(adv.batch.size()));
  return adv;
}

/// Where the operand's remaining dims sit in the result of indexing, and the result's shape.
void result_layout(const Advanced& adv, const Shape& ss, std::vector<std::int64_t>* window_pos,
                   Shape* out) {
  const std::int64_t nb = static_cast<std::int64_t>(adv.batch.size());
  const std::int64_t first = adv.adjacent ? adv.dims.front() : 0;
  std::int64_t pos = 0;
  bool placed = false;
  out->clear();
  window_pos->clear();
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(ss.size()); ++k) {
    const bool indexed = std::find(adv.dims.begin(), adv.dims.end(), k) != adv.dims.end();
    if (indexed) continue;
    if (!placed && (!adv.adjacent || k >= first)) {
      pos += nb;
      placed = true;
    }
    window_pos->push_back(pos++);
  }
  const std::int64_t total = static_cast<std::int64_t>(ss.size() - adv.dims.size()) + nb;
  out->assign(static_cast<std::size_t>(total), 0);
  const std::int64_t batch_start = adv.adjacent ? first : 0;
  for (std::int64_t b = 0; b < nb; ++b) (*out)[batch_start + b] = adv.batch[b];
  std::size_t w = 0;
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(ss.size()); ++k)
    if (std::find(adv.dims.begin(), adv.dims.end(), k) == adv.dims.end())
      (*out)[(*window_pos)[w++]] = ss[k];
}

/// index.Tensor(self, indices: Tensor?[]).
std::vector<Value> index(Lowerer& L) {
  Value self = L.tensor(0);
  const DType d = L.dtype(self);
  L.require_claimed(d);
  const Shape ss = L.shape(self);
  Advanced adv = advanced_index(L, self, 1);
  std::vector<std::int64_t> window_pos;
  Shape out_shape;
  result_layout(adv, ss, &window_pos, &out_shape);
  if (TensorType(d, out_shape).num_elements() == 0)
    return {L.convert(L.b.broadcast_to(L.constant(0, d), out_shape), L.out_dtype(0, d))};
  for (std::int64_t k : adv.dims)
    if (ss[static_cast<std::size_t>(k)] == 0) throw Unsupported("index into an empty dimension");
  hlo::GatherDims g;
  g.offset_dims = window_pos;
  g.collapsed_slice_dims = adv.dims;
  g.start_index_map = adv.dims;
  g.index_vector_dim = static_cast<std::int64_t>(adv.batch.size());
  Shape slice = ss;
  for (std::int64_t k : adv.dims) slice[static_cast<std::size_t>(k)] = 1;
  Value out = L.b.gather(self, adv.vectors, g, slice);
  // A non-adjacent index puts B first; gather already did.
  return {L.convert(out, L.out_dtype(0, d))};
}

/// _index_put_impl_(self, indices, values, accumulate, unsafe) and index_put(_).
std::vector<Value> index_put(Lowerer& L) {
  Value self = L.tensor(0);
  const DType d = L.dtype(self);
  L.require_claimed(d);
  const Shape ss = L.shape(self);
  const bool accumulate = L.flag(3);
  Value values = L.convert(L.tensor(2), d);
  // One boolean mask over the leading dims with one value: a select, no count needed.
  const ArgSpec& a = L.arg(1);
  const auto& idx_values = L.values(1);
  if (a.ints.size() == 1 && a.ints[0] == 1 &&
      (L.dtype(idx_values[0]) == DType::kPred || L.dtype(idx_values[0]) == DType::kU8) &&
      TensorType(d, L.shape(values)).num_elements() == 1) {
    Value mask = idx_values[0];
    const Shape ms = L.shape(mask);
    if (ms.size() > ss.size() || !std::equal(ms.begin(), ms.end(), ss.begin()))
      throw Unsupported("index_put_: mask shape does not match");
    if (L.dtype(mask) != DType::kPred)
      mask = L.b.compare(Comparison::kNE, mask, L.full_like(mask, 0.0));
    Value mb = L.b.broadcast_in_dim(mask, ss, range(static_cast<std::int64_t>(ms.size())));
    Value v = L.b.broadcast_to(L.b.reshape(values, {}), ss);
    if (accumulate) v = d == DType::kPred ? L.b.binary(OpKind::kOr, self, v) : L.b.add(self, v);
    return {L.b.select(mb, v, self)};
  }
  Advanced adv = advanced_index(L, self, 1);
  std::vector<std::int64_t> window_pos;
  Shape upd_shape;
  result_layout(adv, ss, &window_pos, &upd_shape);
  if (TensorType(d, upd_shape).num_elements() == 0) return {self};
  // values broadcast to the indexed shape (leading dims of size 1 may be dropped).
  Shape vs = L.shape(values);
  while (vs.size() > upd_shape.size() && vs.front() == 1) vs.erase(vs.begin());
  values = L.b.reshape(values, vs);
  if (vs.size() < upd_shape.size()) {
    Shape padded(upd_shape.size() - vs.size(), 1);
    padded.insert(padded.end(), vs.begin(), vs.end());
    values = L.b.reshape(values, padded);
  }
  values = L.broadcast_to(values, upd_shape);
  hlo::ScatterDims s;
  s.update_window_dims = window_pos;
  s.inserted_window_dims = adv.dims;
  s.scatter_dims_to_operand_dims = adv.dims;
  s.index_vector_dim = static_cast<std::int64_t>(adv.batch.size());
  return {L.b.scatter(self, adv.vectors, values, s,
                      accumulate ? ScatterKind::kAdd : ScatterKind::kReplace)};
}

/// histc(self, bins, min, max): counts in |bins| equal bins over [min, max] (the data's range
/// when min == max, for integer inputs; a floating one falls back), values outside ignored, the
/// top edge in the last bin. Integer inputs too, as CUDA computes them.
std::vector<Value> histc(Lowerer& L) {
  Value x = L.tensor(0);
  const DType d = L.dtype(x);
  L.require_claimed(d);
  const std::int64_t bins = L.integer(1);
  if (bins <= 0) throw Unsupported("histc: bins must be > 0");
  const double lo = L.real(2), hi = L.real(3);
  if (lo > hi) throw Unsupported("histc: max must be larger than min");
  // A range taken from floating data raises on the CPU when the data holds inf or nan ("range
  // of [inf, inf] is not finite"): only the values can tell, so that call runs on the CPU.
  if (lo == hi && hlo::is_float(d) && TensorType(d, L.shape(x)).num_elements() > 0)
    throw Unsupported("histc over the data's range of a floating tensor");
  const DType c = hlo::is_float(d) ? opmath(d) : DType::kF64;
  const std::int64_t n = TensorType(d, L.shape(x)).num_elements();
  Value v = L.convert(L.b.reshape(x, {n}), c);
  Value vmin = L.constant(lo, c), vmax = L.constant(hi, c);
  if (lo == hi && n > 0) {
    vmin = L.reduce(v, {0}, ReduceKind::kMin, false);
    vmax = L.reduce(v, {0}, ReduceKind::kMax, false);
  }
  Value same = L.b.compare(Comparison::kEQ, vmin, vmax);
  vmin = L.b.select(same, L.b.sub(vmin, L.constant(1, c)), vmin);
  vmax = L.b.select(same, L.b.add(vmax, L.constant(1, c)), vmax);
  const DType out = d;
  Value zeros = L.b.broadcast_to(L.constant(0, out), {bins});
  if (n == 0) return {L.convert(zeros, L.out_dtype(0, out))};
  Value mn = L.b.broadcast_to(vmin, {n}), mx = L.b.broadcast_to(vmax, {n});
  Value scaled =
      L.b.div(L.b.mul(L.b.sub(v, mn), L.full_like(v, static_cast<double>(bins))), L.b.sub(mx, mn));
  Value pos = L.convert(L.b.unary(OpKind::kFloor, scaled), DType::kI64);
  Value last = L.full_like(pos, static_cast<double>(bins - 1));
  pos = L.b.min(pos, last);
  Value inside = L.b.binary(OpKind::kAnd, L.b.compare(Comparison::kGE, v, mn),
                            L.b.compare(Comparison::kLE, v, mx));
  // Outside values go to index |bins|, which the scatter drops.
  pos = L.b.select(inside, pos, L.full_like(pos, static_cast<double>(bins)));
  hlo::ScatterDims s;
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  Value ones = L.b.broadcast_to(L.constant(1, out), {n});
  Value counts = L.b.scatter(zeros, L.b.reshape(pos, {n, 1}), ones, s, ScatterKind::kAdd);
  return {L.convert(counts, L.out_dtype(0, out))};
}

}  // namespace

void add_index_lowerings(std::vector<OpLowering>& r) {
  const auto any = all_types();
  OpLowering g = zero_size_ok(entry(any, gather));
  g.complex_pairs = true;
  g.dtypes.push_back(DType::kC64);
  add(r, {"gather", "gather.out"}, g);
  add(r, {"scatter.src", "scatter_.src", "scatter.src_out"},
      zero_size_ok(entry(any, scatter(ScatterKind::kReplace, false))));
  add(r,
      {"scatter.reduce", "scatter_.reduce", "scatter.reduce_out", "scatter.value_reduce",
       "scatter_.value_reduce", "scatter.value_reduce_out"},
      zero_size_ok(entry(any, [](Lowerer& L) {
        return scatter(ScatterKind::kReplace, L.arg(3).kind != ArgKind::kTensor)(L);
      })));
  add(r, {"scatter.value", "scatter_.value", "scatter.value_out"},
      zero_size_ok(entry(any, scatter(ScatterKind::kReplace, true))));
  add(r, {"scatter_add", "scatter_add_", "scatter_add.out"},
      zero_size_ok(entry(floats_and_ints(), scatter(ScatterKind::kAdd, false))));
  add(r, {"index_add", "index_add_", "index_add.out"},
      zero_size_ok(entry(floats_and_ints(), index_add)));
  add(r, {"index.Tensor", "index.Tensor_out"}, zero_size_ok(entry(any, index)));
  add(r, {"_index_put_impl_", "index_put_", "index_put"}, zero_size_ok(entry(any, index_put)));
  OpLowering h = zero_size_ok(
      entry({DType::kF32, DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8}, histc));
  h.static_scalars = {2, 3};
  add(r, {"histc", "histc.out"}, h);
}

}  // namespace vtrn::lowering
