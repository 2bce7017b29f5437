// Data movement that computes: concatenation (also FSDP2's copy-in and split copy-out), the
// triangular masks, slice_backward's zero padding, alias_copy, and the compiled-graph ops
// vtrn::convert, vtrn::fill and vtrn::constant_pad.
#include "vtrn/torch/lowering/families.h"

#include <algorithm>

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;

/// tril / triu (self, diagonal): keep element (i, j) of the last two dims where j - i <= d (tril)
/// or j - i >= d (triu).
LowerFn triangle(bool lower) {
  return [lower](Lowerer& L) -> std::vector<Value> {
    Value x = L.tensor(0);
    L.require_claimed(L.dtype(x));
    if (L.rank(x) < 2) throw Unsupported("tril/triu of a tensor with fewer than 2 dims");
    const auto s = L.shape(x);
    const int r = L.rank(x);
    TensorType it(DType::kI64, s);
    Value row = L.b.iota(it, r - 2), col = L.b.iota(it, r - 1);
    Value diff = L.b.sub(col, row);
    Value d = L.b.broadcast_to(L.constant(static_cast<double>(L.integer(1)), DType::kI64), s);
    Value keep = L.b.compare(lower ? Comparison::kLE : Comparison::kGE, diff, d);
    return {L.convert(L.b.select(keep, x, L.full_like(x, 0.0)), L.out_dtype(0, L.dtype(x)))};
  };
}

}  // namespace

void add_data_lowerings(std::vector<OpLowering>& r) {
  // cat(tensors, dim): promoted to one dtype; 1-d empty tensors are skipped, as PyTorch does
  // (when all are, the result is 1-d and empty). An out= tensor of another dtype the result
  // can be cast to takes the inputs converted to its dtype, as the CPU's cat (FSDP2 gathers
  // bfloat16 gradients into a float32 reduce-scatter buffer so).
  OpLowering cat = entry(all_types(), [](Lowerer& L) -> std::vector<Value> {
    const auto& xs = L.tensors(0);
    if (xs.empty()) throw Unsupported("cat of no tensors");
    std::vector<PromotionInput> p;
    for (Value v : xs) p.push_back({L.dtype(v), PromotionInput::kDimTensor});
    DType common = result_type(p);
    const std::optional<DType> out = L.given_out_dtype(0);
    if (out && !can_cast(common, *out))
      throw Unsupported("cat: input types can't be cast to the desired output type");
    common = out ? *out : L.out_dtype(0, common);
    L.require_claimed(common);
    // Inputs of one dtype no wider than the result's are concatenated in it and converted
    // once: the same values (a conversion is elementwise), but the copy moves the narrower
    // bytes, not each input converted into a wide temporary first.
    std::vector<Value> parts;
    int rank = -1;
    std::optional<DType> same;
    bool one_dtype = true;
    for (Value v : xs) {
      if (L.rank(v) == 1 && L.shape(v)[0] == 0) continue;
      if (rank < 0) rank = L.rank(v);
      if (L.rank(v) != rank || rank == 0) throw Unsupported("cat of tensors of different ranks");
      if (!same) same = L.dtype(v);
      one_dtype = one_dtype && L.dtype(v) == *same;
      parts.push_back(v);
    }
    if (parts.empty()) return {L.b.broadcast_to(L.constant(0, common), {0})};
    if (!one_dtype || hlo::dtype_size(*same) > hlo::dtype_size(common))
      for (Value& v : parts) v = L.convert(v, common);
    const std::int64_t dim = L.wrap_dim(L.integer(1), rank);
    return {L.convert(parts.size() == 1 ? parts[0] : L.b.concatenate(parts, dim), common)};
  });
  cat.zero_size = true;
  add(r, {"cat", "cat.out"}, cat);
  // slice_backward(grad, input_sizes, dim, start, end, step): the gradient padded with zeros
  // around and between its elements along |dim|.
  add(r, {"slice_backward", "slice_backward.out"},
      entry(all_types(), [](Lowerer& L) -> std::vector<Value> {
        Value g = L.tensor(0);
        L.require_claimed(L.dtype(g));
        const std::vector<std::int64_t> sizes = L.ints(1);
        const int rank = static_cast<int>(sizes.size());
        if (rank == 0 || L.rank(g) != rank) throw Unsupported("slice_backward rank");
        const std::int64_t dim = L.wrap_dim(L.integer(2), rank);
        const std::int64_t size = sizes[static_cast<std::size_t>(dim)];
        std::int64_t start = L.integer(3);
        const std::int64_t step = L.integer(5);
        if (start < 0) start += size;
        start = std::min(std::max<std::int64_t>(start, 0), size);
        const std::int64_t n = L.shape(g)[static_cast<std::size_t>(dim)];
        if (n == 0 || step < 1) throw Unsupported("empty slice_backward");
        std::vector<std::int64_t> low(sizes.size(), 0), high(sizes.size(), 0),
            interior(sizes.size(), 0);
        low[static_cast<std::size_t>(dim)] = start;
        interior[static_cast<std::size_t>(dim)] = step - 1;
        high[static_cast<std::size_t>(dim)] = size - (start + (n - 1) * step + 1);
        if (high[static_cast<std::size_t>(dim)] < 0) throw Unsupported("slice_backward bounds");
        Value zero = L.constant(0.0, L.dtype(g));
        return {L.convert(L.b.pad(g, zero, low, high, interior), L.out_dtype(0, L.dtype(g)))};
      }));
  // alias_copy(self): a dense copy; the compiled-graph path uses it for clone.
  add(r, {"alias_copy", "alias_copy.out"}, entry(all_types(), [](Lowerer& L) -> std::vector<Value> {
        Value x = L.tensor(0);
        L.require_claimed(L.dtype(x));
        return {L.convert(L.b.reshape(x, L.shape(x)), L.out_dtype(0, L.dtype(x)))};
      }));
  // vtrn::convert(self, dtype): the dtype conversion of _to_copy, as one lowered op (the
  // compiled-graph path uses it; _to_copy itself is a native copy in eager mode).
  add(r, {"vtrn::convert"},
      entry(
          all_types(),
          [](Lowerer& L) -> std::vector<Value> {
            Value x = L.tensor(0);
            L.require_claimed(L.dtype(x));
            if (L.arg(1).kind != ArgKind::kDType) throw Unsupported("convert without a dtype");
            return {L.convert(x, L.arg(1).dtype)};
          },
          /*elementwise=*/true));
  // vtrn::fill(like, value): a tensor of |like|'s shape and dtype holding |value| (a runtime
  // scalar); compiled graphs use it for full, full_like and scalar_tensor, which eager mode
  // runs as a native fill. |like| is only read for its type.
  add(r, {"vtrn::fill"}, entry(all_types(), [](Lowerer& L) -> std::vector<Value> {
        Value like = L.tensor(0);
        const DType d = L.dtype(like);
        L.require_claimed(d);
        return {L.broadcast_to(L.scalar(1, d), L.shape(like))};
      }));
  // vtrn::constant_pad(self, pad, value): constant_pad_nd for non-negative pads (pairs from
  // the last dim backwards); compiled graphs use it, eager mode composes it from a fill and a
  // copy.
  add(r, {"vtrn::constant_pad"}, entry(all_types(), [](Lowerer& L) -> std::vector<Value> {
        Value x = L.tensor(0);
        const DType d = L.dtype(x);
        L.require_claimed(d);
        const std::vector<std::int64_t> pad = L.ints(1);
        const int rank = L.rank(x);
        if (pad.size() % 2 != 0 || static_cast<int>(pad.size()) > 2 * rank)
          throw Unsupported("constant_pad of a pad longer than the rank");
        std::vector<std::int64_t> low(static_cast<std::size_t>(rank), 0),
            high(static_cast<std::size_t>(rank), 0), interior(static_cast<std::size_t>(rank), 0);
        for (std::size_t i = 0; i < pad.size() / 2; ++i) {
          const std::size_t dim = static_cast<std::size_t>(rank) - 1 - i;
          low[dim] = pad[2 * i];
          high[dim] = pad[2 * i + 1];
          if (low[dim] < 0 || high[dim] < 0) throw Unsupported("constant_pad of a negative pad");
        }
        return {L.b.pad(x, L.scalar(2, d), low, high, interior)};
      }));
  add(r, {"tril", "tril_", "tril.out"}, entry(all_types(), triangle(true)));
  add(r, {"triu", "triu_", "triu.out"}, entry(all_types(), triangle(false)));
}

}  // namespace vtrn::lowering
