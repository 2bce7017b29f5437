// Data movement that computes: concatenation (also FSDP2's copy-in and split copy-out) and the
// triangular masks.
#include "vtrn/torch/lowering/families.h"

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
  // (when all are, the result is 1-d and empty).
  OpLowering cat = entry(all_types(), [](Lowerer& L) -> std::vector<Value> {
    const auto& xs = L.tensors(0);
    if (xs.empty()) throw Unsupported("cat of no tensors");
    std::vector<PromotionInput> p;
    for (Value v : xs) p.push_back({L.dtype(v), PromotionInput::kDimTensor});
    const DType common = L.out_dtype(0, result_type(p));
    L.require_claimed(common);
    std::vector<Value> parts;
    int rank = -1;
    for (Value v : xs) {
      if (L.rank(v) == 1 && L.shape(v)[0] == 0) continue;
      if (rank < 0) rank = L.rank(v);
      if (L.rank(v) != rank || rank == 0) throw Unsupported("cat of tensors of different ranks");
      parts.push_back(L.convert(v, common));
    }
    if (parts.empty()) return {L.b.broadcast_to(L.constant(0, common), {0})};
    const std::int64_t dim = L.wrap_dim(L.integer(1), rank);
    return {parts.size() == 1 ? parts[0] : L.b.concatenate(parts, dim)};
  });
  cat.zero_size = true;
  add(r, {"cat", "cat.out"}, cat);
  add(r, {"tril", "tril_", "tril.out"}, entry(all_types(), triangle(true)));
  add(r, {"triu", "triu_", "triu.out"}, entry(all_types(), triangle(false)));
}

}  // namespace vtrn::lowering
