#include "vtrn/compiler/passes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "vtrn/hlo/printer.h"
#include "vtrn/hlo/verify.h"

namespace vtrn::compiler {

using hlo::Block;
using hlo::DType;
using hlo::Literal;
using hlo::Op;
using hlo::OpKind;
using hlo::TensorType;

namespace {

// The key is a byte string: integers as 8 bytes, vectors and strings prefixed by their length.
void put(std::string& s, std::int64_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put(std::string& s, const std::vector<std::int64_t>& v) {
  put(s, static_cast<std::int64_t>(v.size()));
  for (std::int64_t x : v) put(s, x);
}
void put(std::string& s, std::string_view v) {
  put(s, static_cast<std::int64_t>(v.size()));
  s += v;
}
void put(std::string& s, const TensorType& t) {
  put(s, static_cast<std::int64_t>(t.dtype));
  put(s, t.dims);
}
template <typename... Fields>
void put_all(std::string& s, const Fields&... fields) {
  (put(s, fields), ...);
}

void block_key(std::string& s, const Block& b) {
  put(s, static_cast<std::int64_t>(b.types.size()));
  for (const TensorType& t : b.types) put(s, t);
  for (int a : b.args) put(s, a);
  for (const Op& op : b.ops) s += op_key(b, op);
  for (int r : b.results) put(s, r);
}

}  // namespace

std::string op_key(const Block& block, const Op& op) {
  std::string s;
  put(s, static_cast<std::int64_t>(op.kind));
  put(s, static_cast<std::int64_t>(op.operands.size()));
  for (int v : op.operands) put(s, v);
  for (int r : op.results) put(s, block.type(r));
  put_all(
      s, op.dims, op.start_indices, op.limit_indices, op.strides, op.edge_padding_low,
      op.edge_padding_high, op.interior_padding, op.dimension,
      static_cast<std::int64_t>(op.comparison) * 16 + static_cast<std::int64_t>(op.compare_type),
      op.dot.lhs_batch, op.dot.rhs_batch, op.dot.lhs_contracting, op.dot.rhs_contracting,
      op.gather.offset_dims, op.gather.collapsed_slice_dims, op.gather.start_index_map,
      op.gather.index_vector_dim, op.scatter.update_window_dims, op.scatter.inserted_window_dims,
      op.scatter.scatter_dims_to_operand_dims, op.scatter.index_vector_dim,
      static_cast<std::int64_t>(op.sleef * 128 + op.vec_sum * 64 + op.cascade_sum * 32 +
                                op.sgemm * 16 + op.vml * 8 + op.is_stable * 4 +
                                op.indices_are_sorted * 2 + op.unique_indices),
      static_cast<std::int64_t>(op.rng_algorithm), op.call_target_name, op.backend_config);
  if (op.kind == OpKind::kConvolution) {
    const hlo::ConvAttrs& c = op.conv;
    const hlo::ConvDimensionNumbers& d = c.dims;
    put_all(s, c.window_strides, c.padding_low, c.padding_high, c.lhs_dilation, c.rhs_dilation,
            c.feature_group_count, c.batch_group_count, d.input_batch, d.input_feature,
            d.input_spatial, d.kernel_input_feature, d.kernel_output_feature, d.kernel_spatial,
            d.output_batch, d.output_feature, d.output_spatial);
  }
  if (op.kind == OpKind::kConstant) {
    put_all(s, op.literal.type, static_cast<std::int64_t>(op.literal.splat),
            std::string_view(reinterpret_cast<const char*>(op.literal.data.data()),
                             op.literal.data.size()));
  }
  for (const auto& r : op.regions) block_key(s, *r);
  return s;
}

void renumber(Block& b) {
  std::vector<int> map(b.types.size(), -1);
  std::vector<TensorType> types;
  auto assign = [&](int v) {
    map[v] = static_cast<int>(types.size());
    types.push_back(b.types[v]);
  };
  for (int a : b.args) assign(a);
  for (Op& op : b.ops) {
    for (int& v : op.operands) v = map[v];
    for (int r : op.results) assign(r);
    for (int& r : op.results) r = map[r];
  }
  for (int& a : b.args) a = map[a];
  for (int& r : b.results) r = map[r];
  b.types = std::move(types);
}

//===----------------------------------------------------------------------===//
// Constant folding
//===----------------------------------------------------------------------===//

namespace {

constexpr std::int64_t kFoldLimit = 4096;

bool foldable_kind(OpKind k) {
  switch (k) {
    case OpKind::kAdd:
    case OpKind::kSubtract:
    case OpKind::kMultiply:
    case OpKind::kDivide:
    case OpKind::kNegate:
    case OpKind::kAbs:
    case OpKind::kMaximum:
    case OpKind::kMinimum:
    case OpKind::kConvert:
      return true;
    default:
      return false;
  }
}

// Exact integer value of element i for integer dtypes.
std::int64_t int_at(const Literal& l, std::int64_t i) { return l.get_int(i); }

bool fold_elementwise(const Op& op, const std::vector<const Literal*>& in, const TensorType& out,
                      Literal* result) {
  const DType din = in[0]->type.dtype;
  if (hlo::is_complex(din) || hlo::is_complex(out.dtype)) return false;
  if (op.kind == OpKind::kDivide && !hlo::is_float(din))
    return false;  // integer division by zero rules: leave to the executor
  const std::int64_t n = out.num_elements();
  if (n > kFoldLimit) return false;
  const bool all_splat = [&] {
    for (const Literal* l : in)
      if (!l->splat && l->type.num_elements() != 1) return false;
    return true;
  }();
  const std::int64_t count = all_splat ? 1 : n;
  Literal r;
  r.type = out;
  r.splat = all_splat && n != 1;
  const int es = hlo::dtype_size(out.dtype);
  r.data.resize(static_cast<std::size_t>(count * es));
  const bool integer = hlo::is_integer(din) || hlo::is_pred(din);
  for (std::int64_t i = 0; i < count; ++i) {
    std::uint8_t* dst = r.data.data() + i * es;
    if (integer && op.kind != OpKind::kConvert) {
      const std::int64_t a = int_at(*in[0], i);
      const std::int64_t b = in.size() > 1 ? int_at(*in[1], i) : 0;
      std::uint64_t v = 0;
      switch (op.kind) {
        case OpKind::kAdd:
          v = static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b);
          break;
        case OpKind::kSubtract:
          v = static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b);
          break;
        case OpKind::kMultiply:
          v = static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b);
          break;
        case OpKind::kNegate:
          v = 0 - static_cast<std::uint64_t>(a);
          break;
        case OpKind::kAbs:
          v = a < 0 ? 0 - static_cast<std::uint64_t>(a) : static_cast<std::uint64_t>(a);
          break;
        case OpKind::kMaximum:
          v = static_cast<std::uint64_t>(
              hlo::is_unsigned(din)
                  ? (static_cast<std::uint64_t>(a) > static_cast<std::uint64_t>(b) ? a : b)
                  : std::max(a, b));
          break;
        case OpKind::kMinimum:
          v = static_cast<std::uint64_t>(
              hlo::is_unsigned(din)
                  ? (static_cast<std::uint64_t>(a) < static_cast<std::uint64_t>(b) ? a : b)
                  : std::min(a, b));
          break;
        default:
          return false;
      }
      if (hlo::is_pred(out.dtype)) v = v != 0;
      std::memcpy(dst, &v, static_cast<std::size_t>(es));  // little-endian truncation wraps
      continue;
    }
    if (op.kind == OpKind::kConvert) {
      if (integer && (hlo::is_integer(out.dtype) || hlo::is_pred(out.dtype))) {
        std::uint64_t v = static_cast<std::uint64_t>(int_at(*in[0], i));
        if (hlo::is_pred(out.dtype)) v = v != 0;
        std::memcpy(dst, &v, static_cast<std::size_t>(es));
      } else if (integer && hlo::is_unsigned(din) && din == DType::kU64) {
        return false;
      } else {
        if (!integer && !hlo::is_float(out.dtype) && !hlo::is_pred(out.dtype))
          return false;  // float->int: leave to the executor
        hlo::store_double(out.dtype, in[0]->get_double(i), dst);
      }
      continue;
    }
    const double a = in[0]->get_double(i);
    const double b = in.size() > 1 ? in[1]->get_double(i) : 0;
    double v = 0;
    switch (op.kind) {
      case OpKind::kAdd:
        v = a + b;
        break;
      case OpKind::kSubtract:
        v = a - b;
        break;
      case OpKind::kMultiply:
        v = a * b;
        break;
      case OpKind::kDivide:
        v = a / b;
        break;
      case OpKind::kNegate:
        v = -a;
        break;
      case OpKind::kAbs:
        v = std::fabs(a);
        break;
      case OpKind::kMaximum:
        v = (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
        break;
      case OpKind::kMinimum:
        v = (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
        break;
      default:
        return false;
    }
    hlo::store_double(out.dtype, v, dst);
  }
  *result = std::move(r);
  return true;
}

}  // namespace

int fold_constants(hlo::Module& module) {
  Block& b = module.main;
  std::unordered_map<int, std::size_t> const_of;  // value -> op index of its constant
  int folded = 0;
  for (std::size_t i = 0; i < b.ops.size(); ++i) {
    Op& op = b.ops[i];
    if (op.kind == OpKind::kConstant) {
      const_of[op.results[0]] = i;
      continue;
    }
    std::vector<const Literal*> in;
    for (int v : op.operands) {
      auto it = const_of.find(v);
      if (it == const_of.end()) break;
      in.push_back(&b.ops[it->second].literal);
    }
    if (in.size() != op.operands.size() || in.empty() || op.results.size() != 1) continue;
    const TensorType& out = b.type(op.results[0]);
    Literal lit;
    bool ok = false;
    if (foldable_kind(op.kind)) {
      ok = fold_elementwise(op, in, out, &lit);
    } else if (op.kind == OpKind::kBroadcastInDim &&
               (in[0]->splat || in[0]->type.num_elements() == 1)) {
      lit.type = out;
      lit.data.assign(in[0]->data.begin(), in[0]->data.begin() + hlo::dtype_size(out.dtype));
      lit.splat = out.num_elements() != 1;
      ok = true;
    } else if (op.kind == OpKind::kReshape) {
      lit = *in[0];
      lit.type = out;
      ok = true;
    }
    if (!ok) continue;
    Op c;
    c.kind = OpKind::kConstant;
    c.results = op.results;
    c.literal = std::move(lit);
    op = std::move(c);
    const_of[op.results[0]] = i;
    ++folded;
  }
  return folded;
}

int eliminate_common_subexpressions(hlo::Module& module) {
  Block& b = module.main;
  std::vector<int> replace(b.types.size());
  for (std::size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<int>(v);
  std::unordered_map<std::string, std::size_t> seen;
  std::vector<Op> kept;
  int merged = 0;
  for (Op& op : b.ops) {
    for (int& v : op.operands) v = replace[v];
    if (op.kind != OpKind::kRngBitGenerator && op.kind != OpKind::kCustomCall) {
      const std::string key = op_key(b, op);
      auto it = seen.find(key);
      if (it != seen.end()) {
        const Op& prev = kept[it->second];
        for (std::size_t r = 0; r < op.results.size(); ++r)
          replace[op.results[r]] = prev.results[r];
        ++merged;
        continue;
      }
      seen.emplace(key, kept.size());
    }
    kept.push_back(std::move(op));
  }
  for (int& r : b.results) r = replace[r];
  b.ops = std::move(kept);
  renumber(b);
  return merged;
}

int fold_transposes_into_dots(hlo::Module& module) {
  Block& b = module.main;
  std::vector<const Op*> producer(b.types.size(), nullptr);
  for (const Op& op : b.ops)
    for (int r : op.results) producer[r] = &op;
  int folded = 0;
  for (Op& op : b.ops) {
    if (op.kind != OpKind::kDotGeneral) continue;
    for (int side = 0; side < 2; ++side) {
      const Op* t = producer[op.operands[side]];
      if (t == nullptr || t->kind != OpKind::kTranspose) continue;
      std::vector<std::int64_t>& batch = side == 0 ? op.dot.lhs_batch : op.dot.rhs_batch;
      std::vector<std::int64_t>& contracting =
          side == 0 ? op.dot.lhs_contracting : op.dot.rhs_contracting;
      const std::vector<std::int64_t>& perm = t->dims;  // result dim i is operand dim perm[i]
      // The free dims keep their order in the result only if the permutation keeps it.
      std::int64_t last = -1;
      bool ordered = true;
      for (std::int64_t d = 0; d < static_cast<std::int64_t>(perm.size()); ++d) {
        if (std::find(batch.begin(), batch.end(), d) != batch.end() ||
            std::find(contracting.begin(), contracting.end(), d) != contracting.end())
          continue;
        ordered = ordered && perm[d] > last;
        last = perm[d];
      }
      if (!ordered) continue;
      for (std::int64_t& d : batch) d = perm[d];
      for (std::int64_t& d : contracting) d = perm[d];
      op.operands[side] = t->operands[0];
      ++folded;
    }
  }
  return folded;
}

namespace {

// Rebuilds a block's op list in order, placing copies of earlier ops just before the op that
// reads them (duplicate_shared_broadcasts, recompute_shared_differences).
class CopyPlacer {
 public:
  explicit CopyPlacer(Block& b) : b_(b), moved_to_(b.ops.size(), 0), origin_(b.types.size()) {
    ops_.reserve(b.ops.size());
    std::iota(origin_.begin(), origin_.end(), 0);
  }
  /// The block's value that |v| copies (|v| itself for the block's own values).
  int origin(int v) const { return origin_[static_cast<std::size_t>(v)]; }
  /// Op |at| of the block as placed: its operands may have been renamed to copies.
  const Op& placed(int at) const { return ops_[moved_to_[static_cast<std::size_t>(at)]]; }
  /// Places |copy|, a copy of the op computing |v|, computing a fresh value of |v|'s type.
  int place(Op copy, int v) {
    const int fresh = static_cast<int>(b_.types.size());
    b_.types.push_back(b_.types[static_cast<std::size_t>(v)]);
    origin_.push_back(origin(v));
    copy.results = {fresh};
    ops_.push_back(std::move(copy));
    ++copies_;
    return fresh;
  }
  /// Places op |i| of the block, after the copies placed for it.
  void keep(std::size_t i) {
    moved_to_[i] = ops_.size();
    ops_.push_back(std::move(b_.ops[i]));
  }
  /// Installs the new op list, renumbered; returns the number of copies placed.
  int finish() {
    b_.ops = std::move(ops_);
    renumber(b_);
    return copies_;
  }

 private:
  Block& b_;
  std::vector<Op> ops_;
  std::vector<std::size_t> moved_to_;  // an op's index in ops_
  std::vector<int> origin_;
  int copies_ = 0;
};

// The copy of value v an op reads, once the op has one (v itself where it keeps the original).
int renamed_to(const std::vector<std::pair<int, int>>& renamed, int v) {
  auto it =
      std::find_if(renamed.begin(), renamed.end(), [&](const auto& r) { return r.first == v; });
  return it == renamed.end() ? -1 : it->second;
}

}  // namespace

int duplicate_shared_broadcasts(hlo::Module& module) {
  Block& b = module.main;
  auto reads_in_loop = [&](const Op& op) {
    if (!hlo::is_elementwise(op.kind) && op.kind != OpKind::kReduce) return false;
    for (int v : op.operands)
      if (hlo::is_complex(b.type(v).dtype)) return false;
    return true;
  };
  // Per value, the op computing it when it is the same at every element: a broadcast of a
  // one-element operand (broadcast_at), or an elementwise op of such values and splat
  // constants alone (uniform_at). A loop reads a splat constant as a literal, so constants stay
  // shared.
  std::vector<int> broadcast_at(b.types.size(), -1), uniform_at(b.types.size(), -1);
  std::vector<char> splat(b.types.size(), 0);
  // How many loop readers (ops that read in a loop) read each such value.
  std::vector<int> loop_readers(b.types.size(), 0);
  auto shared = [&](int v) { return broadcast_at[v] >= 0 || uniform_at[v] >= 0; };
  for (std::size_t i = 0; i < b.ops.size(); ++i) {
    const Op& op = b.ops[i];
    if (op.kind == OpKind::kConstant &&
        (op.literal.splat || b.type(op.results[0]).num_elements() == 1))
      splat[op.results[0]] = 1;
    // Of a one-element operand only: a loop reads it as a scalar. Copying wider ones too (a
    // norm's per-row statistic) made the AEE-on Llama step slower (1.18x the CPU's, not 1.10x).
    if (op.kind == OpKind::kBroadcastInDim && b.type(op.operands[0]).num_elements() == 1)
      broadcast_at[op.results[0]] = static_cast<int>(i);
    if (!reads_in_loop(op)) continue;
    if (op.kind != OpKind::kReduce && op.kind != OpKind::kBroadcastInDim &&
        op.results.size() == 1 && !op.operands.empty() &&
        std::any_of(op.operands.begin(), op.operands.end(), shared) &&
        std::all_of(op.operands.begin(), op.operands.end(),
                    [&](int v) { return shared(v) || splat[v]; }))
      uniform_at[op.results[0]] = static_cast<int>(i);
    for (std::size_t k = 0; k < op.operands.size(); ++k) {
      const int v = op.operands[k];
      const bool again =
          std::find(op.operands.begin(), op.operands.begin() + static_cast<std::ptrdiff_t>(k), v) !=
          op.operands.begin() + static_cast<std::ptrdiff_t>(k);
      if (shared(v) && !again) ++loop_readers[v];
    }
  }
  CopyPlacer placer(b);
  std::vector<char> taken(b.types.size(), 0);
  for (std::size_t i = 0; i < b.ops.size(); ++i) {
    Op& op = b.ops[i];
    if (reads_in_loop(op)) {
      std::vector<std::pair<int, int>> renamed;  // (shared value, its copy) within this op
      // A copy of |v| placed before this op: a uniform value's operands copied too, so that the
      // loops reading copies share nothing computed.
      std::function<int(int)> copy_of = [&](int v) {
        v = placer.origin(v);
        if (const int r = renamed_to(renamed, v); r >= 0) return r;
        const int at = broadcast_at[v] >= 0 ? broadcast_at[v] : uniform_at[v];
        Op copy = placer.placed(at);
        if (broadcast_at[v] < 0)
          for (int& o : copy.operands)
            if (!splat[static_cast<std::size_t>(placer.origin(o))]) o = copy_of(o);
        const int fresh = placer.place(std::move(copy), v);
        renamed.emplace_back(v, fresh);
        return fresh;
      };
      for (int& v : op.operands) {
        if (!shared(v) || loop_readers[v] < 2) continue;
        if (const int r = renamed_to(renamed, v); r >= 0) {
          v = r;
        } else if (!taken[v]) {  // the first reader keeps the original
          taken[v] = 1;
          renamed.emplace_back(v, v);
        } else {
          v = copy_of(v);
        }
      }
    }
    placer.keep(i);
  }
  return placer.finish();
}

int recompute_shared_differences(hlo::Module& module) {
  Block& b = module.main;
  // Each value's readers (op indices, one entry per reading op) and whether it is returned.
  std::vector<std::vector<int>> readers(b.types.size());
  for (std::size_t i = 0; i < b.ops.size(); ++i)
    for (int v : b.ops[i].operands)
      if (readers[v].empty() || readers[v].back() != static_cast<int>(i))
        readers[v].push_back(static_cast<int>(i));
  std::vector<char> returned(b.types.size(), 0);
  for (int r : b.results) returned[r] = 1;
  std::vector<int> def(b.types.size(), -1);
  for (std::size_t i = 0; i < b.ops.size(); ++i)
    for (int r : b.ops[i].results) def[r] = static_cast<int>(i);
  auto loop_reader = [&](int i) {
    const Op& op = b.ops[static_cast<std::size_t>(i)];
    if (!hlo::is_elementwise(op.kind) && op.kind != OpKind::kReduce) return false;
    for (int v : op.operands)
      if (hlo::is_complex(b.type(v).dtype)) return false;
    return true;
  };
  // The difference (or sum) of a value and a broadcast, read by exactly two loops.
  std::vector<char> recompute(b.ops.size(), 0);
  for (std::size_t i = 0; i < b.ops.size(); ++i) {
    const Op& op = b.ops[i];
    if ((op.kind != OpKind::kSubtract && op.kind != OpKind::kAdd) || op.results.size() != 1)
      continue;
    const int r = op.results[0];
    if (returned[r] || readers[r].size() != 2 || hlo::is_complex(b.type(r).dtype) ||
        b.type(r).rank() == 0 || !loop_reader(readers[r][0]) || !loop_reader(readers[r][1]))
      continue;
    bool broadcast_operand = false;
    for (int v : op.operands)
      broadcast_operand =
          broadcast_operand ||
          (def[v] >= 0 && b.ops[static_cast<std::size_t>(def[v])].kind == OpKind::kBroadcastInDim);
    recompute[i] = broadcast_operand;
  }
  CopyPlacer placer(b);
  auto broadcast = [&](int v) {
    const int o = placer.origin(v);
    return def[o] >= 0 && b.ops[static_cast<std::size_t>(def[o])].kind == OpKind::kBroadcastInDim;
  };
  for (std::size_t i = 0; i < b.ops.size(); ++i) {
    Op& op = b.ops[i];
    std::vector<std::pair<int, int>> renamed;  // (value, its copy) within this op
    for (int& v : op.operands) {
      const int p = def[v];
      if (p < 0 || !recompute[static_cast<std::size_t>(p)] || readers[v][0] == static_cast<int>(i))
        continue;
      if (const int r = renamed_to(renamed, v); r >= 0) {
        v = r;
        continue;
      }
      // The second reader: its own copy, with its own copy of each broadcast it reads.
      Op copy = placer.placed(p);
      for (int& o : copy.operands)
        if (broadcast(o)) o = placer.place(placer.placed(def[placer.origin(o)]), o);
      const int fresh = placer.place(std::move(copy), v);
      renamed.emplace_back(v, fresh);
      v = fresh;
    }
    placer.keep(i);
  }
  return placer.finish();
}

int eliminate_dead_code(hlo::Module& module) {
  Block& b = module.main;
  std::vector<bool> used(b.types.size(), false);
  for (int r : b.results) used[r] = true;
  std::vector<bool> keep(b.ops.size(), false);
  for (std::size_t i = b.ops.size(); i-- > 0;) {
    const Op& op = b.ops[i];
    bool live = op.kind == OpKind::kCustomCall;
    for (int r : op.results) live = live || used[r];
    if (!live) continue;
    keep[i] = true;
    for (int v : op.operands) used[v] = true;
  }
  std::vector<Op> kept;
  int removed = 0;
  for (std::size_t i = 0; i < b.ops.size(); ++i) {
    if (keep[i])
      kept.push_back(std::move(b.ops[i]));
    else
      ++removed;
  }
  b.ops = std::move(kept);
  renumber(b);
  return removed;
}

}  // namespace vtrn::compiler
