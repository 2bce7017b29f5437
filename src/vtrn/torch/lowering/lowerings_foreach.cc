// The _foreach_* ops (optimizers, gradient clipping, FSDP2): one module for the whole list, each
// element lowered by the per-tensor entry PyTorch's own slow path would call (add.Tensor,
// lerp.Scalar, linalg_vector_norm, ...), so the numerics are that entry's.
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;

/// How a foreach argument feeds the per-tensor entry's argument.
enum class Feed {
  kElement,   ///< element i of a tensor list
  kShared,    ///< the same tensor or Scalar for every element
  kScalarAt,  ///< element i of a Scalar[] (a runtime scalar)
  kStatic,    ///< a static argument copied as is
  kAbsent,    ///< the per-tensor argument is None
  kFalse,     ///< the per-tensor argument is the bool false
};

struct FeedSpec {
  Feed feed;
  int from;  ///< the foreach argument it comes from
};

/// Lowers foreach op |name| by applying the per-tensor entry |base| to each element of list
/// argument 0, with |feeds| mapping the base entry's arguments.
LowerFn foreach_of(std::string base, std::vector<FeedSpec> feeds) {
  return [base, feeds](Lowerer& L) -> std::vector<Value> {
    const OpLowering* entry = find_lowering(base);
    if (entry == nullptr) throw Unsupported("foreach: no per-tensor lowering " + base);
    const std::size_t n = L.tensors(0).size();
    std::vector<Value> results;
    for (std::size_t i = 0; i < n; ++i) {
      OpCall sub;
      std::vector<std::vector<Value>> values;
      for (const FeedSpec& f : feeds) {
        ArgSpec a;
        std::vector<Value> v;
        const ArgSpec* from =
            (f.feed == Feed::kAbsent || f.feed == Feed::kFalse) ? nullptr : &L.arg(f.from);
        switch (f.feed) {
          case Feed::kElement:
            if (from->types.size() != n) throw Unsupported("foreach: lists of different lengths");
            a.kind = ArgKind::kTensor;
            a.types = {from->types[i]};
            v = {L.values(f.from)[i]};
            break;
          case Feed::kShared:
            a = *from;
            v = L.values(f.from);
            break;
          case Feed::kScalarAt:
            if (from->types.size() != n)
              throw Unsupported("foreach: scalar list of a different length");
            a.kind = ArgKind::kScalar;
            a.types = {from->types[i]};
            v = {L.values(f.from)[i]};
            break;
          case Feed::kStatic:
            a = *from;
            break;
          case Feed::kAbsent:
            break;
          case Feed::kFalse:
            a.kind = ArgKind::kBool;
            a.ints = {0};
            break;
        }
        sub.args.push_back(std::move(a));
        values.push_back(std::move(v));
      }
      if (!L.call.out_dtypes.empty()) sub.out_dtypes = {L.call.out_dtypes.at(i)};
      sub.in_place = L.call.in_place;
      sub.default_float = L.call.default_float;
      Lowerer element(L.b, sub, *entry, std::move(values));
      std::vector<Value> r = entry->lower(element);
      if (r.size() != 1) throw Unsupported("foreach: " + base + " has several results");
      results.push_back(sub.out_dtypes.empty() ? r[0] : element.convert(r[0], sub.out_dtypes[0]));
    }
    return results;
  };
}

/// "_foreach_add.Scalar" -> "_foreach_add_.Scalar"; "_foreach_sqrt" -> "_foreach_sqrt_".
std::string in_place(const std::string& name) {
  const auto dot = name.find('.');
  return dot == std::string::npos ? name + "_" : name.substr(0, dot) + "_" + name.substr(dot);
}

/// Registers the functional op |name| and its in-place variant. |checked|: the Scalar
/// arguments the per-tensor op converts with a range check (OpLowering::checked_scalars).
void add_both(std::vector<OpLowering>& r, const std::string& name, const LowerFn& fn,
              std::vector<int> checked = {}) {
  for (const std::string& n : {name, in_place(name)}) {
    OpLowering e = entry(floats(), fn, true);
    e.name = n;
    e.checked_scalars = checked;
    r.push_back(std::move(e));
  }
}

}  // namespace

void add_foreach_lowerings(std::vector<OpLowering>& r) {
  using F = Feed;
  // Binary ops: .Scalar, .List (alpha for add/sub), .ScalarList, .Tensor.
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum"}) {
    const std::string o = op;
    const bool alpha = o == "add" || o == "sub";
    const std::string base = (o == "maximum" || o == "minimum") ? o : o + ".Tensor";
    auto feeds = [&](Feed other, bool with_alpha) {
      std::vector<FeedSpec> f{{F::kElement, 0}, {other, 1}};
      if (alpha) f.push_back(with_alpha ? FeedSpec{F::kShared, 2} : FeedSpec{F::kAbsent, 0});
      return f;
    };
    add_both(r, "_foreach_" + o + ".Scalar", foreach_of(base, feeds(F::kShared, false)));
    add_both(r, "_foreach_" + o + ".List", foreach_of(base, feeds(F::kElement, alpha)),
             alpha ? std::vector<int>{2} : std::vector<int>{});
    add_both(r, "_foreach_" + o + ".ScalarList", foreach_of(base, feeds(F::kScalarAt, false)));
    if (o == "add" || o == "mul" || o == "div")
      add_both(r, "_foreach_" + o + ".Tensor", foreach_of(base, feeds(F::kShared, o == "add")),
               o == "add" ? std::vector<int>{2} : std::vector<int>{});
  }
  for (const char* op :
       {"sqrt", "rsqrt", "neg", "exp", "expm1", "reciprocal", "abs", "sigmoid", "log", "tanh"})
    add_both(r, std::string("_foreach_") + op, foreach_of(op, {{F::kElement, 0}}));
  for (const char* op : {"addcmul", "addcdiv"}) {
    const std::string o = op;
    add_both(r, "_foreach_" + o + ".Scalar",
             foreach_of(o, {{F::kElement, 0}, {F::kElement, 1}, {F::kElement, 2}, {F::kShared, 3}}),
             {3});
    add_both(
        r, "_foreach_" + o + ".ScalarList",
        foreach_of(o, {{F::kElement, 0}, {F::kElement, 1}, {F::kElement, 2}, {F::kScalarAt, 3}}));
  }
  add_both(r, "_foreach_lerp.Scalar",
           foreach_of("lerp.Scalar", {{F::kElement, 0}, {F::kElement, 1}, {F::kShared, 2}}));
  add_both(r, "_foreach_lerp.ScalarList",
           foreach_of("lerp.Scalar", {{F::kElement, 0}, {F::kElement, 1}, {F::kScalarAt, 2}}));
  add_both(r, "_foreach_lerp.List",
           foreach_of("lerp.Tensor", {{F::kElement, 0}, {F::kElement, 1}, {F::kElement, 2}}));

  // _foreach_norm(self, ord, dtype) -> linalg_vector_norm(self[i], ord, None, False, dtype).
  OpLowering norm = entry(
      floats(),
      foreach_of(
          "linalg_vector_norm",
          {{F::kElement, 0}, {F::kStatic, 1}, {F::kAbsent, 0}, {F::kFalse, 0}, {F::kStatic, 2}}));
  norm.name = "_foreach_norm.Scalar";
  norm.static_scalars = {1};
  r.push_back(norm);

  // _foreach_copy_(self, src): src[i] converted and broadcast to self[i].
  OpLowering copy = entry(
      all_types(),
      [](Lowerer& L) -> std::vector<Value> {
        const auto& self = L.tensors(0);
        const auto& src = L.tensors(1);
        if (self.size() != src.size())
          throw Unsupported("foreach copy: lists of different lengths");
        std::vector<Value> out;
        for (std::size_t i = 0; i < self.size(); ++i)
          out.push_back(L.broadcast_to(L.convert(src[i], L.dtype(self[i])), L.shape(self[i])));
        return out;
      },
      true);
  add(r, {"_foreach_copy_"}, copy);
  OpLowering zero = entry(
      all_types(),
      [](Lowerer& L) -> std::vector<Value> {
        std::vector<Value> out;
        for (Value v : L.tensors(0)) out.push_back(L.full_like(v, 0.0));
        return out;
      },
      true);
  add(r, {"_foreach_zero_"}, zero);
}

}  // namespace vtrn::lowering
