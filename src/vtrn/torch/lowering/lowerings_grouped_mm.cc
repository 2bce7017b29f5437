// torch._grouped_mm (MoE experts): the four layouts of PyTorch's composite, with the int32
// cumulative offsets as a runtime tensor, so one module serves every routing of a shape.
//  * 2-d A [M, K] x 3-d B [G, K, N], offs over A's rows: row m uses B[g] for the group g whose
//    range [offs[g-1], offs[g]) holds m;
//  * 3-d A [G, M, K] x 2-d B [K, N], offs over B's columns: column n uses A[g] likewise;
//  * 2-d A [M, K] x 2-d B [K, N], offs over K: out[g] = A[:, k0:k1] @ B[k0:k1, :] (the weight
//    gradient of the first layout);
//  * 3-d x 3-d, no offs: a batched matmul.
// float32 with offsets is one product per group, as the CPU's loop (compiler/grouped_mm_call.h).
// Otherwise the products are computed for every group and the group of each row (column, k)
// selected, so values of other groups never mix in; float16/bfloat16 accumulate in float32 and
// round once, as the CPU's mm does. Rows (columns) past offs[-1] are left uninitialized by the CPU;
// here they are 0. Bad arguments (ranks, dtypes, offsets, bias) take the CPU's checks.
#include "vtrn/compiler/grouped_mm_call.h"
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::ReduceKind;
using Dims = std::vector<std::int64_t>;

/// [n]: the group of each position 0..n-1 under cumulative ends |offs| [G] (G past the last).
Value group_of(Lowerer& L, Value offs, std::int64_t n) {
  const std::int64_t g = L.shape(offs)[0];
  Value pos = L.b.iota(TensorType(DType::kI64, {n, g}), 0);
  Value ends = L.b.broadcast_in_dim(L.convert(offs, DType::kI64), {n, g}, {1});
  Value passed = L.convert(L.b.compare(Comparison::kGE, pos, ends), DType::kI64);
  return L.reduce(passed, {1}, ReduceKind::kAdd, false);
}

/// [G, n] pred: position i belongs to group g.
Value membership(Lowerer& L, Value offs, std::int64_t n) {
  const std::int64_t g = L.shape(offs)[0];
  Value groups = L.b.broadcast_in_dim(group_of(L, offs, n), {g, n}, {1});
  return L.b.compare(Comparison::kEQ, L.b.iota(TensorType(DType::kI64, {g, n}), 0), groups);
}

/// The sum over dim 0 of |v| [G, ...] where |keep| (broadcast along dim 0 and |dim|) holds:
/// each element comes from exactly one group.
Value pick(Lowerer& L, Value v, Value keep, std::int64_t dim) {
  const Dims s = L.shape(v);
  Value k = L.b.broadcast_in_dim(keep, s, {0, dim});
  return L.reduce(L.b.select(k, v, L.full_like(v, 0.0)), {0}, ReduceKind::kAdd, false);
}

/// float32 with offsets: one product per group, as the CPU's loop (compiler/grouped_mm_call.h).
Value per_group(Lowerer& L, Value a, Value b, Value offs, const Dims& out) {
  return L.b.custom_call(std::string(compiler::kGroupedMmTarget), {a, b, offs},
                         {TensorType(DType::kF32, out)}, "")[0];
}

std::vector<Value> grouped_mm(Lowerer& L) {
  Value a = L.tensor(0), b = L.tensor(1);
  const DType d = L.dtype(a);
  L.require_claimed(d);
  if (L.dtype(b) != d) throw Unsupported("_grouped_mm operands of different dtypes");
  if (L.has(3)) throw Unsupported("_grouped_mm bias (PyTorch's check refuses it)");
  if (L.has(4) && L.arg(4).dtype != d) throw Unsupported("_grouped_mm out_dtype");
  const int ra = L.rank(a), rb = L.rank(b);
  if ((ra != 2 && ra != 3) || (rb != 2 && rb != 3)) throw Unsupported("_grouped_mm ranks");
  const bool has_offs = L.has(2);
  if (has_offs == (ra == 3 && rb == 3)) throw Unsupported("_grouped_mm offsets");
  Value offs;
  if (has_offs) {
    offs = L.tensor(2);
    if (L.dtype(offs) != DType::kI32 || L.rank(offs) != 1)
      throw Unsupported("_grouped_mm offsets must be a 1-d int32 tensor");
  }
  const Dims as = L.shape(a), bs = L.shape(b);
  if (as.back() != bs[static_cast<std::size_t>(rb - 2)])
    throw Unsupported("_grouped_mm contraction sizes");
  const DType c = opmath(d);
  Value ac = L.convert(a, c), bc = L.convert(b, c);
  Value out;
  if (ra == 3 && rb == 3) {
    if (as[0] != bs[0]) throw Unsupported("_grouped_mm group counts");
    out = L.b.dot_general(ac, bc, hlo::DotDims{{0}, {0}, {2}, {1}});
  } else if (ra == 2 && rb == 3) {
    if (L.shape(offs)[0] != bs[0]) throw Unsupported("_grouped_mm group counts");
    if (d == DType::kF32) return {per_group(L, a, b, offs, {as[0], bs[2]})};
    // [G, M, N]: every row times every group's matrix.
    Value all = L.b.dot_general(bc, ac, hlo::DotDims{{}, {}, {1}, {1}});  // [G, N, M]
    all = L.b.transpose(all, {0, 2, 1});
    out = pick(L, all, membership(L, offs, as[0]), 1);
  } else if (ra == 3 && rb == 2) {
    if (L.shape(offs)[0] != as[0]) throw Unsupported("_grouped_mm group counts");
    if (d == DType::kF32) return {per_group(L, a, b, offs, {as[1], bs[1]})};
    Value all = L.b.dot_general(ac, bc, hlo::DotDims{{}, {}, {2}, {0}});  // [G, M, N]
    out = pick(L, all, membership(L, offs, bs[1]), 2);
  } else {
    const std::int64_t g = L.shape(offs)[0], m = as[0], k = as[1], n = bs[1];
    if (d == DType::kF32) return {per_group(L, a, b, offs, {g, m, n})};
    Value member = membership(L, offs, k);  // [G, K]
    Value am = L.b.select(L.b.broadcast_in_dim(member, {g, m, k}, {0, 2}),
                          L.b.broadcast_in_dim(ac, {g, m, k}, {1, 2}),
                          L.b.broadcast_to(L.constant(0, c), {g, m, k}));
    Value bm = L.b.select(L.b.broadcast_in_dim(member, {g, k, n}, {0, 1}),
                          L.b.broadcast_in_dim(bc, {g, k, n}, {1, 2}),
                          L.b.broadcast_to(L.constant(0, c), {g, k, n}));
    out = L.b.dot_general(am, bm, hlo::DotDims{{0}, {0}, {2}, {1}});
  }
  return {L.convert(out, d)};
}

}  // namespace

void add_grouped_mm_lowerings(std::vector<OpLowering>& r) {
  // _grouped_mm(self, mat2, offs?, bias?, out_dtype?)
  add(r, {"_grouped_mm"}, entry(floats(), grouped_mm));
}

}  // namespace vtrn::lowering
