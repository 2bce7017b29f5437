// Fused loops (see executor.h): the domain in chunks (chunk_ elements), each op one loop over
// the chunk (kernels_elementwise.h), a reduce root folding each chunk (kernels_reduce.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "vtrn/runtime/executor.h"
#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/kernels_elementwise.h"
#include "vtrn/runtime/kernels_instr.h"
#include "vtrn/runtime/kernels_reduce.h"
#include "vtrn/runtime/kernels_strided_load.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using hlo::OpKind;
using Cls = FusedProgram::Cls;
using elementwise::cls_of;
using elementwise::fill;
using elementwise::load_contiguous;
using elementwise::load_elem;
using elementwise::select;
using elementwise::store_contiguous;

namespace {
// The shortest table read in place (run_table_instr): shorter ones are filled into the chunk,
// whose loop is cheaper than a call per repeat.
constexpr std::int64_t kMinTablePeriod = 64;

/// Per-run bookkeeping of run_range, kept by each thread so that a loop allocates nothing (one
/// thread-local: in a shared library each is reached through a __tls_get_addr call).
struct RunState {
  std::vector<void*> in_place;
  std::vector<int> alias;
  std::vector<char> live, need, spread;
  /// Per instruction: 0, or which operand (1 the left, 2 the right) it reads as a scalar.
  std::vector<char> scalar_side;
  /// Per slot, the last live instruction that reads it (instructions count when the chunk's
  /// stores and reducer read it); per extra output, the live instruction computing it (-1).
  std::vector<std::int64_t> last_read;
  std::vector<int> extra_producer;
  std::vector<char> extra_direct;
  std::vector<int> run_order;
  std::vector<int> row_load, table_load;
  std::vector<char> filled;
  struct InPlaceLoad {
    int slot;
    const std::uint8_t* base;
    int size;
  };
  std::vector<InPlaceLoad> dense_in;
  std::vector<std::int64_t> idx;
  /// Per load, the walk of a strided input (Buf::strides) in this run; empty where the load
  /// walks as built. |view_per_dim|: the stride per domain dim a walk is built from.
  std::vector<std::vector<std::int64_t>> view_dims, view_walk_strides;
  std::vector<std::int64_t> view_per_dim;
  /// Slot scratch: a fresh allocation per loop cost more than a small loop's arithmetic (its
  /// malloc consolidated the fastbins each time).
  std::unique_ptr<std::int64_t[]> scratch;
  std::size_t scratch_n = 0;

  /// Scratch for |n| chunk elements. Beyond kKeep elements the buffer is the caller's alone and
  /// freed with |owned|.
  std::int64_t* scratch_for(std::size_t n, std::unique_ptr<std::int64_t[]>& owned) {
    constexpr std::size_t kKeep = std::size_t{1} << 17;  // 1 MiB
    if (n > kKeep) {
      owned.reset(new std::int64_t[n]);
      return owned.get();
    }
    if (scratch_n < n) {
      scratch.reset(new std::int64_t[n]);
      scratch_n = n;
    }
    return scratch.get();
  }
};

RunState& thread_run_state() {
  thread_local RunState state;
  return state;
}

/// The domain as a load with element stride |strides[d]| along domain dim d walks it (see
/// FusedProgram::Load::walk_dims): size-1 dims dropped, a dim merged into the one outside it
/// where the source steps through both as one.
void walk_of(const std::vector<std::int64_t>& domain, const std::vector<std::int64_t>& strides,
             std::vector<std::int64_t>& dims, std::vector<std::int64_t>& walk_strides) {
  dims.clear();
  walk_strides.clear();
  for (std::size_t d = 0; d < domain.size(); ++d) {
    if (domain[d] == 1) continue;
    if (!dims.empty() && walk_strides.back() == strides[d] * domain[d]) {
      dims.back() *= domain[d];
      walk_strides.back() = strides[d];
    } else {
      dims.push_back(domain[d]);
      walk_strides.push_back(strides[d]);
    }
  }
}
}  // namespace

FusedProgram::FusedProgram(const hlo::Block& b, const std::vector<int>& ops,
                           const std::vector<const hlo::Literal*>& constant_of) {
  const hlo::Op& root = b.ops[ops.back()];
  reduce_ = root.kind == OpKind::kReduce;
  domain_ = reduce_ ? b.type(root.operands[0]).dims : b.type(root.results[0]).dims;
  n_ = 1;
  for (std::int64_t d : domain_) n_ *= d;
  std::vector<int> slot_of(b.types.size(), -1);
  auto new_slot = [&](DType d) {
    slots_.push_back({cls_of(d), d, false});
    return static_cast<int>(slots_.size()) - 1;
  };
  // A slot reading block value |v| from outside the loop.
  auto input_slot = [&](int v) {
    if (slot_of[v] >= 0) return slot_of[v];
    const hlo::TensorType& t = b.type(v);
    const int s = new_slot(t.dtype);
    Load l{s, v, t.dtype, 0, {}};
    const hlo::Literal* c = v < static_cast<int>(constant_of.size()) ? constant_of[v] : nullptr;
    if (c && (c->splat || t.num_elements() == 1)) {
      l.mode = 3;
      l.cd = c->get_double(0);
      l.ci = c->get_int(0);
    } else if (t.num_elements() == 1 && !(t.dims == domain_ && n_ == 1)) {
      l.mode = 1;
      input_values_.push_back(v);
    } else if (t.dims == domain_) {
      l.mode = 0;
      input_values_.push_back(v);
    } else {
      throw ExecError("fused loop: operand " + t.str() + " does not match the loop domain");
    }
    slots_[s].uniform = l.mode == 1 || l.mode == 3;
    loads_.push_back(l);
    slot_of[v] = s;
    return s;
  };
  for (int oi : ops) {
    const hlo::Op& op = b.ops[oi];
    if (op.kind == OpKind::kBroadcastInDim) {
      const int v = op.operands[0];
      const hlo::TensorType& t = b.type(v);
      const int s = new_slot(t.dtype);
      Load l{s, v, t.dtype, 2, std::vector<std::int64_t>(domain_.size(), 0)};
      l.source_dim.assign(domain_.size(), -1);
      const auto src = strides_of(t.dims);
      for (std::size_t i = 0; i < op.dims.size(); ++i) {
        if (t.dims[i] == 1) continue;
        l.strides[op.dims[i]] = src[i];
        l.source_dim[op.dims[i]] = static_cast<int>(i);
      }
      walk_of(domain_, l.strides, l.walk_dims, l.walk_strides);
      const hlo::Literal* c = v < static_cast<int>(constant_of.size()) ? constant_of[v] : nullptr;
      if (c && (c->splat || t.num_elements() == 1)) {
        l.mode = 3;
        l.cd = c->get_double(0);
        l.ci = c->get_int(0);
      } else if (t.num_elements() == 1) {
        l.mode = 1;
        input_values_.push_back(v);
      } else {
        input_values_.push_back(v);
      }
      slots_[s].uniform = l.mode == 1 || l.mode == 3;
      loads_.push_back(l);
      slot_of[op.results[0]] = s;
      continue;
    }
    if (op.kind == OpKind::kReduce) {
      root_slot_ = input_slot(op.operands[0]);
      const int init = op.operands[1];
      const hlo::Literal* c =
          init < static_cast<int>(constant_of.size()) ? constant_of[init] : nullptr;
      if (c) {
        init_is_const_ = true;
        init_const_ = c->get_double(0);
        init_const_i_ = c->get_int(0);
      } else {
        init_value_ = init;
        input_values_.push_back(init);
      }
      const hlo::TensorType& out = b.type(op.results[0]);
      out_dtype_ = out.dtype;
      out_n_ = out.num_elements();
      output_value_ = op.results[0];
      reduce_layout_ = ReduceLayout(hlo::match_reduce_region(*op.regions[0]), domain_, op.dims);
      reduce_layout_.cascade_sum = op.cascade_sum && b.type(op.operands[0]).dtype == DType::kF32;
      reduce_layout_.vec_sum = op.vec_sum && b.type(op.operands[0]).dtype == DType::kF32;
      continue;
    }
    Instr in{op.kind, -1};
    in.in_dtype = b.type(op.operands[0]).dtype;
    if (op.kind == OpKind::kSelect) in.in_dtype = b.type(op.operands[1]).dtype;
    if (op.kind == OpKind::kCompare) in.cmp = op.comparison;
    in.vml = op.vml;
    in.sleef = op.sleef;
    in.a = input_slot(op.operands[0]);
    if (op.operands.size() > 1) in.b = input_slot(op.operands[1]);
    if (op.operands.size() > 2) in.c = input_slot(op.operands[2]);
    in.dst = new_slot(b.type(op.results[0]).dtype);
    auto uniform = [&](int slot) { return slot < 0 || slots_[slot].uniform; };
    in.uniform = uniform(in.a) && uniform(in.b) && uniform(in.c);
    in.picks = !in.uniform && in.kind == OpKind::kSelect && uniform(in.a);
    has_picks_ = has_picks_ || in.picks;
    if (!in.uniform && in.kind == OpKind::kMultiply && hlo::is_float(slots_[in.dst].dtype) &&
        slots_[in.dst].cls != Cls::kI64 && uniform(in.a) != uniform(in.b)) {
      const int other = uniform(in.a) ? in.b : in.a;
      in.scales = slots_[other].dtype == slots_[in.dst].dtype;
    }
    has_scales_ = has_scales_ || in.scales;
    slots_[in.dst].uniform = in.uniform;
    slot_of[op.results[0]] = in.dst;
    instrs_.push_back(in);
  }
  if (!reduce_) {
    output_value_ = root.results[0];
    out_dtype_ = b.type(output_value_).dtype;
    root_slot_ = slot_of[output_value_];
    out_n_ = n_;
    // Multi-output fusion: a member's value returned or read by an op outside the loop.
    std::vector<bool> member(b.ops.size(), false), needed(b.types.size(), false);
    for (int oi : ops) member[static_cast<std::size_t>(oi)] = true;
    for (std::size_t i = 0; i < b.ops.size(); ++i)
      if (!member[i])
        for (int v : b.ops[i].operands) needed[static_cast<std::size_t>(v)] = true;
    for (int v : b.results) needed[static_cast<std::size_t>(v)] = true;
    for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
      const hlo::Op& op = b.ops[ops[i]];
      if (op.kind == OpKind::kBroadcastInDim) continue;
      const int v = op.results[0];
      if (!needed[static_cast<std::size_t>(v)]) continue;
      extra_values_.push_back(v);
      extra_slots_.push_back(slot_of[v]);
      extra_dtypes_.push_back(b.type(v).dtype);
    }
  }
  fold_logistic();
  fold_update();
  assign_chunks();
  choose_chunk();
  // Values loaded more than once (e.g. an input used by two loads) are listed once.
  std::sort(input_values_.begin(), input_values_.end());
  input_values_.erase(std::unique(input_values_.begin(), input_values_.end()), input_values_.end());
}

void FusedProgram::run_range(const std::vector<Buf>& values, std::uint8_t* out, std::int64_t lo,
                             std::int64_t hi, Reducer* reducer,
                             const std::vector<std::uint8_t*>& extra) const {
  if (hi <= lo) return;
  const std::size_t ns = slots_.size();
  // Each slot's chunk (assign_chunks) holds |stride| elements: a range shorter than a chunk
  // needs no more than its length (rounded to whole cache lines). One more cache line apart,
  // chunks do not start at the same offset within a 4 KiB page: a loop loading one chunk and
  // storing another at a multiple of 4 KiB stalls on the false store-to-load dependency (4K
  // aliasing), and chunks 4 KiB apart all fall in the same L1 sets.
  const std::int64_t chunk = chunk_;
  const auto stride = static_cast<std::size_t>(std::min(chunk, (hi - lo + 15) / 16 * 16) + 16);
  RunState& st = thread_run_state();
  std::unique_ptr<std::int64_t[]> owned;
  auto* const scratch = reinterpret_cast<float*>(
      st.scratch_for((static_cast<std::size_t>(units_) * stride + 1) / 2, owned));
  const std::int64_t* const unit_of = slot_unit_.data();
  // A contiguous load that would only copy (same type in memory and in the loop) reads the
  // input in place: a load's slot has a chunk of its own, which no instruction writes.
  std::vector<void*>& in_place = st.in_place;
  in_place.assign(ns, nullptr);
  // A picking select's slot reads as the operand it picked.
  std::vector<int>& alias = st.alias;
  alias.resize(ns);
  for (std::size_t k = 0; k < ns; ++k) alias[k] = static_cast<int>(k);
  // (Raw pointers: GCC recomputes the address of the thread-local RunState, a call to
  // __tls_get_addr in a shared library, at each use of a reference into it, which cost a fifth
  // of a small loop's time.)
  void** const in_place_at = in_place.data();
  const int* const alias_of = alias.data();
  auto slot_ptr = [&](int s) -> void* {
    s = alias_of[s];
    void* p = in_place_at[s];
    return p != nullptr ? p : scratch + static_cast<std::size_t>(unit_of[s]) * stride;
  };
  const int rank = static_cast<int>(domain_.size());
  // Inputs read as strided views walk with their own strides: a dense load (mode 0) through
  // the domain's dims, a broadcast one through its source dims.
  const std::size_t nl = loads_.size();
  if (st.view_dims.size() < nl) {
    st.view_dims.resize(nl);
    st.view_walk_strides.resize(nl);
  }
  for (std::size_t li = 0; li < nl; ++li) {
    const Load& l = loads_[li];
    st.view_dims[li].clear();
    const std::int64_t* vs = values[l.value].strides;
    if (vs == nullptr || (l.mode != 0 && l.mode != 2)) continue;
    std::vector<std::int64_t>& per_dim = st.view_per_dim;
    per_dim.assign(domain_.size(), 0);
    for (std::size_t d = 0; d < domain_.size(); ++d)
      per_dim[d] = l.mode == 0 ? vs[d] : (l.source_dim[d] < 0 ? 0 : vs[l.source_dim[d]]);
    walk_of(domain_, per_dim, st.view_dims[li], st.view_walk_strides[li]);
    if (st.view_dims[li].empty()) {  // one element
      st.view_dims[li].push_back(1);
      st.view_walk_strides[li].push_back(0);
    }
  }
  std::vector<std::int64_t>& idx = st.idx;
  idx.assign(static_cast<std::size_t>(rank), 0);
  // Constant and scalar slots are set once, on element 0: no op writes them.
  for (const Load& l : loads_) {
    if (l.mode != 3 && l.mode != 1) continue;
    void* dst = slot_ptr(l.slot);
    const Cls c = slots_[l.slot].cls;
    double dv = l.cd;
    std::int64_t iv = l.ci;
    if (l.mode == 1) {
      const std::uint8_t* p = values[l.value].ptr;
      if (c == Cls::kI64)
        iv = load_elem<std::int64_t>(l.dtype, p, 0);
      else if (c == Cls::kF64)
        dv = load_elem<double>(l.dtype, p, 0);
      else
        dv = load_elem<float>(l.dtype, p, 0);
    }
    if (c == Cls::kF32)
      *static_cast<float*>(dst) = static_cast<float>(dv);
    else if (c == Cls::kF64)
      *static_cast<double*>(dst) = dv;
    else
      *static_cast<std::int64_t*>(dst) = iv;
  }
  // Uniform instructions, once on element 0.
  for (const Instr& in : instrs_) {
    if (!in.uniform) continue;
    run_instr(in, slots_[in.dst].dtype, slot_ptr(in.a), in.b >= 0 ? slot_ptr(in.b) : nullptr,
              in.c >= 0 ? slot_ptr(in.c) : nullptr, slot_ptr(in.dst), 1);
  }
  // The instructions each chunk runs: not the uniform ones, nor the picking selects, nor (with
  // picks) what only an unpicked operand needs.
  std::vector<char>& live = st.live;
  live.assign(instrs_.size(), 0);
  if (!has_picks_) {
    for (std::size_t k = 0; k < instrs_.size(); ++k) live[k] = !instrs_[k].uniform;
  } else {
    for (const Instr& in : instrs_) {
      if (!in.picks) continue;
      const bool p = *static_cast<const std::int64_t*>(slot_ptr(in.a)) != 0;
      alias[static_cast<std::size_t>(in.dst)] = alias[static_cast<std::size_t>(p ? in.b : in.c)];
    }
    std::vector<char>& need = st.need;
    need.assign(ns, 0);
    need[static_cast<std::size_t>(root_slot_)] = 1;
    for (int e : extra_slots_) need[static_cast<std::size_t>(e)] = 1;
    for (std::size_t k = instrs_.size(); k-- > 0;) {
      const Instr& in = instrs_[k];
      if (in.uniform || !need[static_cast<std::size_t>(in.dst)]) continue;
      if (in.picks) {
        need[static_cast<std::size_t>(alias[static_cast<std::size_t>(in.dst)])] = 1;
        continue;
      }
      live[k] = 1;
      for (int o : in.operands())
        if (o >= 0) need[static_cast<std::size_t>(o)] = 1;
    }
  }
  // A multiply by a uniform 1 reads as its other operand.
  if (has_scales_) {
    for (std::size_t k = 0; k < instrs_.size(); ++k) {
      const Instr& in = instrs_[k];
      if (!in.scales || !live[k]) continue;
      const bool a_uniform = slots_[in.a].uniform;
      const int u = a_uniform ? in.a : in.b;
      const double factor = slots_[u].cls == Cls::kF64 ? *static_cast<const double*>(slot_ptr(u))
                                                       : *static_cast<const float*>(slot_ptr(u));
      if (factor != 1.0) continue;
      alias[static_cast<std::size_t>(in.dst)] =
          alias[static_cast<std::size_t>(a_uniform ? in.b : in.a)];
      live[k] = 0;
    }
  }
  // A float binary op with one uniform operand takes it as a scalar (binary_scalar_float).
  std::vector<char>& scalar_side = st.scalar_side;
  scalar_side.assign(instrs_.size(), 0);
  auto uniform = [&](int s) { return slots_[alias[static_cast<std::size_t>(s)]].uniform; };
  for (std::size_t k = 0; k < instrs_.size(); ++k) {
    const Instr& in = instrs_[k];
    if (!live[k] || !takes_scalar(in) || (in.c >= 0 && uniform(in.c))) continue;
    if (uniform(in.a) != uniform(in.b)) scalar_side[k] = uniform(in.a) ? 1 : 2;
  }
  // A float binary op reading a per-row value broadcast along the row (a load walking [rows,
  // row] with stride 0 along the row: a softmax's max or sum, a norm's scale) takes one scalar
  // per row (binary_rows_float, side 3 left or 4 right); the load then fills no chunk unless
  // something else reads it per element.
  std::vector<int>& row_load = st.row_load;  // per slot: its row-broadcast load, or -1
  row_load.assign(ns, -1);
  for (std::size_t li = 0; li < nl; ++li) {
    const Load& l = loads_[li];
    const Cls c = slots_[l.slot].cls;
    if (l.mode == 2 && st.view_dims[li].empty() && l.walk_dims.size() == 2 &&
        l.walk_strides[1] == 0 &&
        ((c == Cls::kF32 && l.dtype == DType::kF32) || (c == Cls::kF64 && l.dtype == DType::kF64)))
      row_load[l.slot] = static_cast<int>(li);
  }
  auto row_value = [&](int s) { return row_load[alias[static_cast<std::size_t>(s)]] >= 0; };
  // One reading a table repeated along the domain (a load walking [repeats, period] with
  // strides [0, 1]: a norm's weight, a rotary table) reads it in place, a run per repeat
  // (side 5 left or 6 right), where the period is long enough to pay for the runs.
  std::vector<int>& table_load = st.table_load;  // per slot: its table load, or -1
  table_load.assign(ns, -1);
  for (std::size_t li = 0; li < nl; ++li) {
    const Load& l = loads_[li];
    const Cls c = slots_[l.slot].cls;
    if (l.mode == 2 && st.view_dims[li].empty() && l.walk_dims.size() == 2 &&
        l.walk_strides[0] == 0 && l.walk_strides[1] == 1 && l.walk_dims[1] >= kMinTablePeriod &&
        ((c == Cls::kF32 && l.dtype == DType::kF32) || (c == Cls::kF64 && l.dtype == DType::kF64)))
      table_load[l.slot] = static_cast<int>(li);
  }
  auto table_value = [&](int s) { return table_load[alias[static_cast<std::size_t>(s)]] >= 0; };
  std::vector<char>& filled = st.filled;  // per slot: a row-broadcast or table load fills it
  filled.assign(ns, 0);
  for (std::size_t k = 0; k < instrs_.size(); ++k) {
    const Instr& in = instrs_[k];
    if (!live[k]) continue;
    // (An fma's addend is read per element: a row-broadcast multiplicand takes the row path.)
    const bool addend_per_element =
        in.c < 0 || (in.kind == OpKind::kFma && !row_value(in.c) && !uniform(in.c));
    if (scalar_side[k] == 0 && takes_scalar(in) && addend_per_element &&
        row_value(in.a) != row_value(in.b) && !uniform(in.a) && !uniform(in.b)) {
      scalar_side[k] = row_value(in.a) ? 3 : 4;
      continue;
    }
    if (scalar_side[k] == 0 && takes_scalar(in) && in.c < 0 && !row_value(in.a) &&
        !row_value(in.b) && table_value(in.a) != table_value(in.b) && !uniform(in.a) &&
        !uniform(in.b)) {
      scalar_side[k] = table_value(in.a) ? 5 : 6;
      continue;
    }
    for (int o : in.operands())
      if (o >= 0) filled[alias[static_cast<std::size_t>(o)]] = 1;
  }
  filled[alias[static_cast<std::size_t>(root_slot_)]] = 1;
  for (int e : extra_slots_) filled[alias[static_cast<std::size_t>(e)]] = 1;
  // A uniform slot is spread over the chunk only where something reads it per element: a live
  // instruction, the root or an extra output (a scalar that only feeds other scalars is not).
  std::vector<char>& spread = st.spread;
  spread.assign(ns, 0);
  auto reads = [&](int s) {
    if (s < 0) return;
    const auto r = static_cast<std::size_t>(alias[static_cast<std::size_t>(s)]);
    if (slots_[r].uniform) spread[r] = 1;
  };
  for (std::size_t k = 0; k < instrs_.size(); ++k) {
    if (!live[k]) continue;
    const Instr& in = instrs_[k];
    // (A folded update reads its uniform |a| as a scalar.)
    if (scalar_side[k] != 1 && in.update == Instr::Update::kNone) reads(in.a);
    if (scalar_side[k] != 2) reads(in.b);
    reads(in.c);
    reads(in.d);
  }
  reads(root_slot_);
  for (int e : extra_slots_) reads(e);
  for (std::size_t s = 0; s < ns; ++s) {
    if (!spread[s]) continue;
    void* p = scratch + static_cast<std::size_t>(unit_of[s]) * stride;
    const auto n = static_cast<std::int64_t>(stride);
    if (slots_[s].cls == Cls::kF32)
      fill(static_cast<float*>(p), *static_cast<float*>(p), n);
    else if (slots_[s].cls == Cls::kF64)
      fill(static_cast<double*>(p), *static_cast<double*>(p), n);
    else
      fill(static_cast<std::int64_t*>(p), *static_cast<std::int64_t*>(p), n);
  }
  // The root computed straight into the output (below) must be the last instruction run.
  // The slot the root reads as (a picking select's is the operand it picked), and whether the
  // last instruction run computes it.
  const int root = alias[static_cast<std::size_t>(root_slot_)];
  bool root_last = false;
  for (std::size_t k = instrs_.size(); k-- > 0;)
    if (live[k]) {
      root_last = instrs_[k].dst == root;
      break;
    }
  // Outputs written straight from an instruction: what reads an input after the instruction.
  const auto n_instrs = static_cast<std::int64_t>(instrs_.size());
  std::vector<std::int64_t>& last_read = st.last_read;
  last_read.assign(ns, -1);
  for (std::int64_t k = 0; k < n_instrs; ++k) {
    if (!live[k]) continue;
    for (int o : instrs_[k].operands())
      if (o >= 0) last_read[alias[static_cast<std::size_t>(o)]] = k;
  }
  last_read[root] = n_instrs;
  std::vector<int>& extra_producer = st.extra_producer;
  extra_producer.assign(extra_slots_.size(), -1);
  for (std::size_t e = 0; e < extra_slots_.size(); ++e) {
    const int se = alias[static_cast<std::size_t>(extra_slots_[e])];
    last_read[se] = n_instrs;
    if (extra_dtypes_[e] != DType::kF32 || slots_[se].dtype != DType::kF32 ||
        slots_[se].cls != Cls::kF32)
      continue;
    for (std::int64_t k = 0; k < n_instrs; ++k)
      if (live[k] && instrs_[k].dst == se) extra_producer[e] = static_cast<int>(k);
  }
  // A dense load that would only copy (same type in memory and in the loop) reads the input in
  // place; a reduce only reads its root slot.
  auto reads_in_place = [&](const Load& l) {
    const Cls c = slots_[l.slot].cls;
    const bool same = (c == Cls::kF32 && l.dtype == DType::kF32) ||
                      (c == Cls::kF64 && l.dtype == DType::kF64) ||
                      (c == Cls::kI64 && l.dtype == DType::kI64);
    return same && (reduce_ || l.slot != root_slot_);
  };
  // Loads read in place below (dense, and of the loop's own type), with their buffers.
  std::vector<RunState::InPlaceLoad>& dense_in = st.dense_in;
  dense_in.clear();
  for (std::size_t li = 0; li < nl; ++li) {
    const Load& l = loads_[li];
    if (l.mode == 0 && st.view_dims[li].empty() && reads_in_place(l))
      dense_in.push_back({l.slot, values[l.value].ptr, hlo::dtype_size(l.dtype)});
  }
  // Whether instruction |k| may write float32 elements [lo, hi) of |base| directly: they
  // overlap no input read in place but one exactly, at the same index, that nothing reads after
  // k (an in-place update, x.mul_(2), out over x: each element read before it is written). The
  // loops take their pointers as __restrict; a same-index alias is what they do elementwise.
  auto writable = [&](std::int64_t k, int slot, const std::uint8_t* base) {
    for (const RunState::InPlaceLoad& in : dense_in) {
      if (in.slot == slot || in.base + lo * in.size >= base + hi * 4 ||
          base + lo * 4 >= in.base + hi * in.size)
        continue;
      if (in.base != base || in.size != 4 || last_read[in.slot] > k) return false;
    }
    return true;
  };
  // Float32 outputs computed straight into their buffers: the root when the last instruction
  // computes it, an extra output by the instruction computing it.
  const bool root_direct = !reduce_ && out_dtype_ == DType::kF32 &&
                           slots_[root].dtype == DType::kF32 && slots_[root].cls == Cls::kF32 &&
                           root_last && writable(n_instrs, root, out);
  std::vector<char>& extra_direct = st.extra_direct;
  extra_direct.assign(extra_slots_.size(), 0);
  const std::int64_t out_size = hlo::dtype_size(out_dtype_);
  for (std::size_t e = 0; e < extra_slots_.size(); ++e) {
    const std::uint8_t* base = extra[e];
    // (A reduce stores its outputs elsewhere.)
    const bool apart =
        reduce_ || base + lo * 4 >= out + hi * out_size || out + lo * out_size >= base + hi * 4;
    extra_direct[e] =
        extra_producer[e] >= 0 && apart &&
        alias[static_cast<std::size_t>(extra_slots_[e])] != root &&
        writable(extra_producer[e], alias[static_cast<std::size_t>(extra_slots_[e])], base);
  }
  // The instructions each chunk runs, in order.
  std::vector<int>& run_order = st.run_order;
  run_order.clear();
  for (std::int64_t k = 0; k < n_instrs; ++k)
    if (live[k]) run_order.push_back(static_cast<int>(k));
  const int* const run_first = run_order.data();
  const int* const run_last = run_first + run_order.size();
  const char* const scalar_at = scalar_side.data();
  for (std::int64_t start = lo; start < hi; start += chunk) {
    const std::int64_t len = std::min(chunk, hi - start);
    for (std::size_t li = 0; li < nl; ++li) {
      const Load& l = loads_[li];
      if (l.mode == 3 || l.mode == 1) continue;
      if ((row_load[l.slot] == static_cast<int>(li) ||
           table_load[l.slot] == static_cast<int>(li)) &&
          !filled[l.slot])
        continue;
      void* dst = slot_ptr(l.slot);
      const Cls c = slots_[l.slot].cls;
      const std::uint8_t* p = values[l.value].ptr;
      const bool view = !st.view_dims[li].empty();
      if (l.mode == 0 && !view) {
        if (reads_in_place(l)) {
          in_place[static_cast<std::size_t>(l.slot)] =
              const_cast<std::uint8_t*>(p) + start * hlo::dtype_size(l.dtype);
          continue;
        }
        load_contiguous(l.dtype, p, start, len, dst);
        continue;
      }
      // Strided (broadcast, or a strided view) load: odometer over the load's walked dims.
      const std::vector<std::int64_t>& dims = view ? st.view_dims[li] : l.walk_dims;
      const std::vector<std::int64_t>& strides = view ? st.view_walk_strides[li] : l.walk_strides;
      const int wr = static_cast<int>(dims.size());
      std::int64_t rem = start, off = 0;
      for (int d = wr - 1; d >= 0; --d) {
        idx[d] = rem % dims[d];
        rem /= dims[d];
        off += idx[d] * strides[d];
      }
      const std::int64_t last = wr > 0 ? dims[wr - 1] : 1;
      const std::int64_t last_stride = wr > 0 ? strides[wr - 1] : 0;
      // Float32 rows read whole (stride 1) or every other element (a view's step of 2).
      const bool f32_rows =
          c == Cls::kF32 && l.dtype == DType::kF32 && (last_stride == 1 || last_stride == 2);
      // Carries a dim that reached its size, from |from| outward (each wraps exactly to 0).
      auto carry = [&](int from) {
        for (int d = from; d > 0 && idx[d] == dims[d]; --d) {
          off -= dims[d] * strides[d];
          idx[d] = 0;
          ++idx[d - 1];
          off += strides[d - 1];
        }
      };
      std::int64_t i = 0;
      while (i < len) {
        if (f32_rows && wr >= 2 && idx[wr - 1] == 0 && len - i >= last) {
          // Whole rows at once, the odometer moved once for all of them: a table read in a
          // permuted domain ([seq, d] under [b, seq, heads, d]) is rows of 16 floats.
          const std::int64_t rows = std::min((len - i) / last, dims[wr - 2] - idx[wr - 2]);
          const std::int64_t row_stride = strides[wr - 2];
          const float* from = reinterpret_cast<const float*>(p) + off;
          float* __restrict to = static_cast<float*>(dst) + i;
          if (last_stride == 2)
            for (std::int64_t r = 0; r < rows; ++r, to += last, from += row_stride)
              load_every_other(from, to, last);
          else
            for (std::int64_t r = 0; r < rows; ++r, to += last, from += row_stride)
              for (std::int64_t j = 0; j < last; ++j) to[j] = from[j];
          i += rows * last;
          off += rows * row_stride;
          idx[wr - 2] += rows;
          carry(wr - 2);
          continue;
        }
        // Run along the last dimension.
        const std::int64_t run = wr > 0 ? std::min(len - i, last - idx[wr - 1]) : len;
        if (f32_rows && last_stride == 1) {  // inline: a broadcast table's rows may be 16 floats
          const float* __restrict from = reinterpret_cast<const float*>(p) + off;
          float* __restrict to = static_cast<float*>(dst) + i;
          for (std::int64_t j = 0; j < run; ++j) to[j] = from[j];
        } else {
          load_run(l.dtype, c, p, off, last_stride, run, dst, i);
        }
        i += run;
        if (wr == 0) break;
        // Advance the odometer by |run| along the last dim.
        off += run * last_stride;
        idx[wr - 1] += run;
        carry(wr - 1);
      }
    }
    for (std::size_t e = 0; e < extra_slots_.size(); ++e)
      if (extra_direct[e])
        in_place[static_cast<std::size_t>(alias[static_cast<std::size_t>(extra_slots_[e])])] =
            extra[e] + start * 4;
    if (root_direct) in_place[static_cast<std::size_t>(root)] = out + start * 4;
    for (const int* k = run_first; k != run_last; ++k) {
      const Instr& in = instrs_[static_cast<std::size_t>(*k)];
      if (scalar_at[*k] >= 5) {  // one operand a table load
        const bool left = scalar_at[*k] == 5;
        const Load& l = loads_[static_cast<std::size_t>(table_load[alias_of[left ? in.a : in.b]])];
        run_table_instr(in, slots_[in.dst].dtype, slot_ptr(left ? in.b : in.a), values[l.value].ptr,
                        l.walk_dims[1], start % l.walk_dims[1], left, slot_ptr(in.dst), len);
        continue;
      }
      if (scalar_at[*k] >= 3) {  // one operand a row-broadcast load
        const bool left = scalar_at[*k] == 3;
        const Load& l = loads_[static_cast<std::size_t>(row_load[alias_of[left ? in.a : in.b]])];
        const std::int64_t row = l.walk_dims[1], row_stride = l.walk_strides[0];
        run_rows_instr(in, slots_[in.dst].dtype, slot_ptr(left ? in.b : in.a), values[l.value].ptr,
                       (start / row) * row_stride, row_stride, row, start % row, left,
                       in.c >= 0 ? slot_ptr(in.c) : nullptr, slot_ptr(in.dst), len);
        continue;
      }
      if (scalar_at[*k] != 0) {
        run_scalar_instr(in, slots_[in.dst].dtype, slot_ptr(in.a), slot_ptr(in.b),
                         in.c >= 0 ? slot_ptr(in.c) : nullptr, scalar_at[*k] == 1, slot_ptr(in.dst),
                         len);
        continue;
      }
      if (in.update != Instr::Update::kNone) {
        run_update_instr(in, slots_[in.dst].dtype, slot_ptr(in.a), slot_ptr(in.b), slot_ptr(in.c),
                         slot_ptr(in.d), slot_ptr(in.dst), len);
        continue;
      }
      run_instr(in, slots_[in.dst].dtype, slot_ptr(in.a), in.b >= 0 ? slot_ptr(in.b) : nullptr,
                in.c >= 0 ? slot_ptr(in.c) : nullptr, slot_ptr(in.dst), len);
    }
    for (std::size_t e = 0; e < extra_values_.size(); ++e)
      if (!extra_direct[e])
        store_contiguous(extra_dtypes_[e], slot_ptr(extra_slots_[e]), len, extra[e], start);
    if (!reduce_) {
      if (!root_direct) store_contiguous(out_dtype_, slot_ptr(root_slot_), len, out, start);
      continue;
    }
    reducer->add(slot_ptr(root_slot_), len, start);
  }
}

}  // namespace vtrn::runtime::kernels
