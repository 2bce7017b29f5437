// Shared pieces of the lowering families (lowerings_*.cc): dtype sets, registration helpers,
// the row split the normalizations share, the prefix scan and gather/scatter index vectors.
// Internal to the lowering unit.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "vtrn/torch/lowering/lowering.h"

namespace vtrn::lowering::family {

// Functions, not variables: the registry is built during static initialization (when the
// kernels register), possibly before a namespace-scope vector of another unit exists.
inline std::vector<DType> floats() { return {DType::kF32, DType::kBF16, DType::kF16}; }
inline std::vector<DType> integers() {
  return {DType::kI64, DType::kI32, DType::kI16, DType::kI8, DType::kU8};
}
inline std::vector<DType> floats_and_ints() {
  std::vector<DType> v = floats();
  const std::vector<DType> i = integers();
  v.insert(v.end(), i.begin(), i.end());
  return v;
}
inline std::vector<DType> all_types() {
  std::vector<DType> v = floats_and_ints();
  v.push_back(DType::kPred);
  return v;
}

/// Adds one entry per overload name, all sharing |proto|'s lowering and flags.
inline void add(std::vector<OpLowering>& r, std::initializer_list<const char*> names,
                const OpLowering& proto) {
  for (const char* n : names) {
    OpLowering e = proto;
    e.name = n;
    r.push_back(std::move(e));
  }
}

inline OpLowering entry(std::vector<DType> dtypes, LowerFn fn, bool elementwise = false) {
  OpLowering e;
  e.dtypes = std::move(dtypes);
  e.lower = std::move(fn);
  e.elementwise = elementwise;
  return e;
}

/// |e| with |args| as its checked Scalar arguments (OpLowering::checked_scalars).
inline OpLowering with_checked_scalars(OpLowering e, std::vector<int> args) {
  e.checked_scalars = std::move(args);
  return e;
}

/// |e|, marked as reproducing the CPU's results (or errors) for zero-size inputs.
inline OpLowering zero_size_ok(OpLowering e) {
  e.zero_size = true;
  return e;
}

/// A normalization's split of |input| into M rows of K, the trailing |normalized| dims making a
/// row (layer norm, RMS norm). Shapes PyTorch's own checks refuse are Unsupported, so the CPU
/// kernel reports them.
inline std::pair<std::int64_t, std::int64_t> normalized_rows(
    Lowerer& L, Value input, const std::vector<std::int64_t>& normalized, const char* op) {
  const std::vector<std::int64_t> s = L.shape(input);
  if (normalized.empty() || normalized.size() > s.size())
    throw Unsupported(std::string(op) + " normalized_shape");
  const std::size_t axis = s.size() - normalized.size();
  std::int64_t m = 1, k = 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i < axis) {
      m *= s[i];
    } else {
      if (s[i] != normalized[i - axis]) throw Unsupported(std::string(op) + " shape mismatch");
      k *= s[i];
    }
  }
  return {m, k};
}

/// Inclusive prefix |kind| (add or multiply) of |x| along |dim|, in log2(n) shifted steps.
inline Value prefix_scan(Lowerer& L, Value x, std::int64_t dim, hlo::OpKind kind) {
  const auto s = L.shape(x);
  const std::int64_t n = s[static_cast<std::size_t>(dim)];
  const double identity = kind == hlo::OpKind::kAdd ? 0.0 : 1.0;
  const int r = L.rank(x);
  for (std::int64_t shift = 1; shift < n; shift *= 2) {
    std::vector<std::int64_t> start(static_cast<std::size_t>(r), 0), limit = s;
    limit[static_cast<std::size_t>(dim)] = n - shift;
    Value head = L.b.slice(x, start, limit);
    std::vector<std::int64_t> low(static_cast<std::size_t>(r), 0), high(low), interior(low);
    low[static_cast<std::size_t>(dim)] = shift;
    Value shifted = L.b.pad(head, L.constant(identity, L.dtype(x)), low, high, interior);
    x = L.b.binary(kind, x, shifted);
  }
  return x;
}

/// The index vectors of gather/scatter along |dim| with |index| (shape S, rank r): S + [r], where
/// entry k is index for k == dim and the position along k otherwise.
inline Value full_indices(Lowerer& L, Value index, std::int64_t dim) {
  std::vector<std::int64_t> s = L.shape(index);
  const int r = static_cast<int>(s.size());
  std::vector<std::int64_t> s1 = s;
  s1.push_back(1);
  std::vector<Value> parts;
  for (int k = 0; k < r; ++k) {
    Value v = k == dim ? L.convert(index, hlo::DType::kI64)
                       : L.b.iota(hlo::TensorType(hlo::DType::kI64, s), k);
    parts.push_back(L.b.reshape(v, s1));
  }
  return parts.size() == 1 ? parts[0] : L.b.concatenate(parts, r);
}

}  // namespace vtrn::lowering::family
