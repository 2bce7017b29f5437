#include "vtrn/runtime/executor.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "vtrn/compiler/aten_addmm.h"
#include "vtrn/compiler/aten_batch_norm.h"
#include "vtrn/compiler/aten_conv2d.h"
#include "vtrn/compiler/aten_gelu.h"
#include "vtrn/compiler/aten_group_norm.h"
#include "vtrn/compiler/aten_layer_norm.h"
#include "vtrn/compiler/aten_layer_norm_backward.h"
#include "vtrn/compiler/aten_nll_loss.h"
#include "vtrn/compiler/aten_norm.h"
#include "vtrn/compiler/aten_softmax.h"
#include "vtrn/compiler/attention_through_memory.h"
#include "vtrn/compiler/fused_attention.h"
#include "vtrn/compiler/grouped_mm_call.h"
#include "vtrn/nki/registry.h"
#include "vtrn/runtime/aten_batch_norm.h"
#include "vtrn/runtime/aten_conv2d.h"
#include "vtrn/runtime/aten_gelu.h"
#include "vtrn/runtime/aten_group_norm.h"
#include "vtrn/runtime/aten_layer_norm_backward.h"
#include "vtrn/runtime/aten_nll_loss.h"
#include "vtrn/runtime/aten_softmax.h"
#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/grouped_mm_call.h"
#include "vtrn/runtime/kernels_addmm.h"
#include "vtrn/runtime/kernels_attention.h"
#include "vtrn/runtime/kernels_norm.h"
#include "vtrn/runtime/strided_copy.h"

namespace vtrn::runtime {

using compiler::Kernel;
using compiler::KernelKind;
using hlo::OpKind;

HostTensor HostTensor::from_doubles(hlo::TensorType t, const std::vector<double>& values) {
  HostTensor h(std::move(t));
  if (static_cast<std::int64_t>(values.size()) != h.type.num_elements())
    throw ExecError("HostTensor::from_doubles: " + std::to_string(values.size()) + " values for " +
                    h.type.str());
  const int es = hlo::dtype_size(h.type.dtype);
  for (std::size_t i = 0; i < values.size(); ++i)
    hlo::store_double(h.type.dtype, values[i], h.data.data() + i * es);
  return h;
}

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
// `custom_call @vtrn.nki`: the NKI kernel its backend_config names, run by the interpreter.
void run_nki_call(const CustomCallArgs& a) {
  const std::optional<nki::CallConfig> c = nki::parse_backend_config(a.backend_config);
  if (!c)
    throw ExecError("custom_call @vtrn.nki has a malformed backend_config \"" + a.backend_config +
                    "\"");
  const std::shared_ptr<const nki::RegisteredKernel> k = nki::find_kernel(c->kernel);
  if (!k)
    throw ExecError("custom_call @vtrn.nki names NKI kernel " + c->kernel +
                    ", which this process has not traced; call the kernel once (eagerly or "
                    "through torch.compile) so it is registered before the module runs");
  std::vector<std::size_t> in_bytes, out_bytes;
  for (const hlo::TensorType& t : a.input_types)
    in_bytes.push_back(static_cast<std::size_t>(t.byte_size()));
  for (const hlo::TensorType& t : a.output_types)
    out_bytes.push_back(static_cast<std::size_t>(t.byte_size()));
  try {
    nki::run_kernel(*k, a.inputs, in_bytes, a.outputs, out_bytes);
  } catch (const std::invalid_argument& e) {
    throw ExecError(e.what());
  }
}

std::map<std::string, CustomCallFn>& registry() {
  static std::map<std::string, CustomCallFn> r{
      {std::string(nki::kCustomCallTarget), run_nki_call},
      {std::string(compiler::kAtenAddmmTarget), kernels::aten_addmm},
      {std::string(compiler::kAtenNormTarget), kernels::aten_norm},
      {std::string(compiler::kAtenNllLossTarget), aten_nll_loss::call},
      {std::string(compiler::kAtenConv2dTarget), aten_conv2d::call},
      {std::string(compiler::kAtenConv2dBackwardTarget), aten_conv2d::backward_call},
      {std::string(compiler::kAtenLayerNormBackwardTarget), aten_layer_norm_backward::call},
      {std::string(compiler::kAtenLayerNormTarget), kernels::aten_layer_norm},
      {std::string(compiler::kAtenBatchNormTarget), aten_batch_norm::call},
      {std::string(compiler::kAtenBatchNormBackwardTarget), aten_batch_norm::backward_call},
      {std::string(compiler::kGroupedMmTarget), grouped_mm::call},
      {std::string(compiler::kAtenSoftmaxTarget), aten_softmax::call},
      {std::string(compiler::kAtenGroupNormTarget), aten_group_norm::call},
      {std::string(compiler::kAtenGroupNormBackwardTarget), aten_group_norm::backward_call},
      {std::string(compiler::kAtenGeluTarget), aten_gelu::forward_call},
      {std::string(compiler::kAtenGeluBackwardTarget), aten_gelu::backward_call},
      {std::string(compiler::kAtenGeluTanhTarget), aten_gelu::tanh_forward_call},
      {std::string(compiler::kAtenGeluTanhBackwardTarget), aten_gelu::tanh_backward_call},
      {std::string(compiler::kAttentionTarget), kernels::attention_forward},
      {std::string(compiler::kAttentionBackwardTarget), kernels::attention_backward},
      {std::string(compiler::kFlashAttentionTarget), kernels::flash_attention_forward},
      {std::string(compiler::kFlashAttentionBackwardTarget), kernels::flash_attention_backward}};
  return r;
}

bool fusible_alone(const hlo::Block& b, const hlo::Op& op) {
  for (int v : op.operands)
    if (hlo::is_complex(b.type(v).dtype)) return false;
  for (int v : op.results)
    if (hlo::is_complex(b.type(v).dtype)) return false;
  if (hlo::is_elementwise(op.kind) || op.kind == OpKind::kBroadcastInDim) return true;
  return op.kind == OpKind::kReduce && op.operands.size() == 2 &&
         hlo::match_reduce_region(*op.regions[0]) != hlo::ReduceKind::kOther;
}

}  // namespace

void register_custom_call(const std::string& target, CustomCallFn fn) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[target] = std::move(fn);
}

namespace {

int positive_env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? 0 : std::max(0, std::atoi(v));
}

struct ThreadBudget {
  bool fixed = false;  // VTRN_NUM_THREADS
  std::atomic<int> threads{1};
  ThreadBudget() {
    int n = positive_env("VTRN_NUM_THREADS");
    fixed = n > 0;
    if (!fixed) n = positive_env("OMP_NUM_THREADS");
    if (n <= 0) n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    threads.store(n);
    openblas_set_num_threads(n);
  }
};

ThreadBudget& thread_budget() {
  static ThreadBudget budget;
  return budget;
}

}  // namespace

int executor_threads() { return thread_budget().threads.load(std::memory_order_relaxed); }

void set_executor_threads(int n) {
  ThreadBudget& b = thread_budget();
  n = std::max(n, 1);
  if (b.fixed || b.threads.load(std::memory_order_relaxed) == n) return;
  b.threads.store(n, std::memory_order_relaxed);
  openblas_set_num_threads(n);  // one pool for the process
}

/// Scratch buffers of one run (its arena of intermediates, staged results), recycled through a
/// per-thread free list: a fresh allocation of a large arena maps new pages, and faulting them
/// in cost more than the kernels that fill them (attention's [batch, heads, q, k] scores, for
/// instance).
class ScratchBuffers {
 public:
  std::uint8_t* take(std::size_t bytes) {
    auto& list = free_list()[bytes];
    std::unique_ptr<std::uint8_t[]> buf;
    if (!list.empty()) {
      buf = std::move(list.back());
      list.pop_back();
      cached_bytes() -= bytes;
    } else {
      buf.reset(new std::uint8_t[bytes]);
    }
    held_.emplace_back(bytes, std::move(buf));
    return held_.back().second.get();
  }
  ~ScratchBuffers() {
    for (auto& [bytes, buf] : held_) {
      // Freed beyond the cap, but a thread keeps one buffer of any size (a run's arena).
      if (cached_bytes() > 0 && cached_bytes() + bytes > kMaxCachedBytes) continue;
      cached_bytes() += bytes;
      free_list()[bytes].push_back(std::move(buf));
    }
  }

 private:
  static constexpr std::size_t kMaxCachedBytes = std::size_t{256} << 20;
  static std::unordered_map<std::size_t, std::vector<std::unique_ptr<std::uint8_t[]>>>&
  free_list() {
    thread_local std::unordered_map<std::size_t, std::vector<std::unique_ptr<std::uint8_t[]>>> list;
    return list;
  }
  static std::size_t& cached_bytes() {
    thread_local std::size_t bytes = 0;
    return bytes;
  }
  std::vector<std::pair<std::size_t, std::unique_ptr<std::uint8_t[]>>> held_;
};

/// The bookkeeping vectors of one run, reused by the thread's later runs: a small op's run
/// allocated eight of them. A run nested in another (a custom call running an executable)
/// takes the next one.
struct RunVectors {
  struct Span {
    const std::uint8_t* lo;
    const std::uint8_t* hi;
    std::size_t input;
    bool view;  ///< a strided input (never written over)
  };
  std::vector<kernels::Buf> values;
  std::vector<std::uint8_t*> direct;
  std::vector<char> has_direct, staged, written;
  std::vector<Span> spans;
  std::vector<const std::uint8_t*> reach, source, op_in;
  std::vector<std::uint8_t*> extra, op_out;
};

class PooledRunVectors {
 public:
  PooledRunVectors() : pool_(pool()) {
    if (pool_.vectors.size() <= pool_.depth)
      pool_.vectors.push_back(std::make_unique<RunVectors>());
    v_ = pool_.vectors[pool_.depth++].get();
  }
  ~PooledRunVectors() { --pool_.depth; }
  PooledRunVectors(const PooledRunVectors&) = delete;
  PooledRunVectors& operator=(const PooledRunVectors&) = delete;
  RunVectors& operator*() const { return *v_; }

 private:
  struct Pool {
    std::vector<std::unique_ptr<RunVectors>> vectors;
    std::size_t depth = 0;  ///< runs of this thread in progress
  };
  static Pool& pool() {
    thread_local Pool p;
    return p;
  }
  Pool& pool_;
  RunVectors* v_;
};

struct Step {
  const Kernel* kernel = nullptr;
  int op = -1;    ///< root op index
  int head = -1;  ///< a fused kernel's dot_general, computed before its epilogue loop
  std::unique_ptr<kernels::FusedProgram> fused;
  /// On the first step of a row chain: the chain and how many steps it runs (this one too).
  std::shared_ptr<const kernels::RowChain> chain;
  std::size_t chain_steps = 0;
};

namespace {

// Marks each longest run of fused loops (and the reshapes between them) that can run as a row
// chain on its first step.
void find_row_chains(const hlo::Block& b, std::vector<Step>& steps) {
  auto plain = [&](std::size_t i) { return steps[i].fused && steps[i].head < 0; };
  auto bitcast = [&](std::size_t i) { return steps[i].kernel->kind == KernelKind::kBitcast; };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!plain(i) || !steps[i].fused->reduces()) continue;
    std::vector<const kernels::FusedProgram*> loops{steps[i].fused.get()};
    std::vector<std::vector<std::pair<int, int>>> bitcasts(1);
    std::optional<kernels::RowChain> best;
    std::size_t n = 0;
    for (std::size_t j = i + 1; j < steps.size() && (plain(j) || bitcast(j)); ++j) {
      if (bitcast(j)) {
        const hlo::Op& op = b.ops[steps[j].op];
        bitcasts.back().emplace_back(op.results[0], op.operands[0]);
        continue;
      }
      loops.push_back(steps[j].fused.get());
      bitcasts.emplace_back();
      std::optional<kernels::RowChain> c = kernels::RowChain::make(b, loops, bitcasts);
      if (!c) break;
      best = std::move(c);
      n = j + 1 - i;
    }
    if (!best) continue;
    steps[i].chain = std::make_shared<const kernels::RowChain>(std::move(*best));
    steps[i].chain_steps = n;
    i += n - 1;
  }
}

}  // namespace

struct LoadedExecutable::Impl {
  compiler::Executable exe;
  std::vector<Step> steps;
  /// Constants the kernels read as whole buffers, expanded on the first run (a splat stays one
  /// element until then, so loading or compiling never materializes a large constant).
  std::vector<int> constant_values;
  std::once_flag constants_once;
  std::vector<std::vector<std::uint8_t>>
      constants;  ///< by value number (empty if not a needed constant)
  std::vector<std::int64_t> arg_bytes, result_bytes;
  std::vector<char> is_arg;  ///< by value number
  /// By result: the value a kernel computes that the result is a reshape (or a chain of them)
  /// of, or -1. That kernel writes its value straight into the result's buffer: a reshape moves
  /// no data, so neither need its result.
  std::vector<int> reshaped_from;
  /// Per input: only fused loops outside row chains read it (through their loads), so a
  /// strided view of it is read where it lies.
  std::vector<char> reads_view_in_place;

  void materialize_constants() {
    std::call_once(constants_once, [this] {
      const hlo::Block& b = exe.module.main;
      std::vector<std::vector<std::uint8_t>> c(b.types.size());
      for (const hlo::Op& op : b.ops)
        if (op.kind == OpKind::kConstant &&
            std::binary_search(constant_values.begin(), constant_values.end(), op.results[0]))
          c[op.results[0]] = op.literal.expanded();
      constants = std::move(c);
    });
  }
};

LoadedExecutable::LoadedExecutable(compiler::Executable exe) : impl_(std::make_shared<Impl>()) {
  impl_->exe = std::move(exe);
  const hlo::Block& b = impl_->exe.module.main;
  std::vector<const hlo::Literal*> constant_of(b.types.size(), nullptr);
  for (const hlo::Op& op : b.ops)
    if (op.kind == OpKind::kConstant) constant_of[op.results[0]] = &op.literal;
  std::set<int> needed(b.results.begin(), b.results.end());
  for (const Kernel& k : impl_->exe.kernels) {
    if (k.kind == KernelKind::kConstant) continue;
    Step s;
    s.kernel = &k;
    s.op = k.ops.back();
    const hlo::Op& root = b.ops[s.op];
    const auto head = std::find_if(k.ops.begin(), k.ops.end(),
                                   [&](int i) { return b.ops[i].kind == OpKind::kDotGeneral; });
    if (k.kind == KernelKind::kFused && head != k.ops.end()) {
      // An epilogue: the dot's result is the loop's input, read while it is in cache.
      s.head = *head;
      for (int v : b.ops[s.head].operands) needed.insert(v);
      std::vector<int> loop = k.ops;
      loop.erase(loop.begin() + (head - k.ops.begin()));
      s.fused = std::make_unique<kernels::FusedProgram>(b, loop, constant_of);
      for (int v : s.fused->inputs()) needed.insert(v);
    } else if (k.kind == KernelKind::kFused ||
               (k.kind == KernelKind::kOp && fusible_alone(b, root))) {
      s.fused = std::make_unique<kernels::FusedProgram>(b, k.ops, constant_of);
      for (int v : s.fused->inputs()) needed.insert(v);
    } else if (root.kind == OpKind::kCustomCall) {
      for (int v : root.operands) needed.insert(v);
    } else {
      for (int v : root.operands) needed.insert(v);
    }
    impl_->steps.push_back(std::move(s));
  }
  find_row_chains(b, impl_->steps);
  impl_->is_arg.assign(b.types.size(), 0);
  for (int a : b.args) {
    impl_->is_arg[a] = 1;
    impl_->arg_bytes.push_back(b.type(a).byte_size());
  }
  for (int r : b.results) impl_->result_bytes.push_back(b.type(r).byte_size());
  std::vector<int> def(b.types.size(), -1);
  for (std::size_t i = 0; i < b.ops.size(); ++i)
    for (int r : b.ops[i].results) def[r] = static_cast<int>(i);
  for (int r : b.results) {
    int x = r;
    while (def[x] >= 0 && b.ops[def[x]].kind == OpKind::kReshape) x = b.ops[def[x]].operands[0];
    const bool computed = def[x] >= 0 && b.ops[def[x]].kind != OpKind::kConstant;
    impl_->reshaped_from.push_back(x != r && computed ? x : -1);
  }
  // Values something other than a plain fused loop reads: a returned value, a dot (an
  // epilogue's head), a row chain's loops (their overlap checks take dense extents), any other
  // kernel.
  std::vector<char> read_densely(b.types.size(), 0);
  for (int r : b.results) read_densely[r] = 1;
  for (std::size_t si = 0; si < impl_->steps.size(); ++si) {
    const Step& s = impl_->steps[si];
    if (s.chain) {
      for (std::size_t j = si; j < si + s.chain_steps; ++j) {
        const Step& t = impl_->steps[j];
        if (t.fused)
          for (int v : t.fused->inputs()) read_densely[v] = 1;
        else
          for (int v : b.ops[t.op].operands) read_densely[v] = 1;
      }
      si += s.chain_steps - 1;
      continue;
    }
    if (s.fused) {
      if (s.head >= 0)
        for (int v : b.ops[s.head].operands) read_densely[v] = 1;
      continue;
    }
    for (int v : b.ops[s.op].operands) read_densely[v] = 1;
  }
  for (int a : b.args) impl_->reads_view_in_place.push_back(read_densely[a] ? 0 : 1);
  for (int v : needed)  // std::set: sorted, as materialize_constants() expects
    if (constant_of[v]) impl_->constant_values.push_back(v);
}

LoadedExecutable::~LoadedExecutable() = default;

const compiler::Executable& LoadedExecutable::executable() const { return impl_->exe; }

std::vector<hlo::TensorType> LoadedExecutable::input_types() const {
  std::vector<hlo::TensorType> t;
  const hlo::Block& b = impl_->exe.module.main;
  for (int a : b.args) t.push_back(b.type(a));
  return t;
}

std::vector<hlo::TensorType> LoadedExecutable::output_types() const {
  std::vector<hlo::TensorType> t;
  const hlo::Block& b = impl_->exe.module.main;
  for (int r : b.results) t.push_back(b.type(r));
  return t;
}

void LoadedExecutable::run(std::span<const void* const> inputs,
                           std::span<void* const> outputs) const {
  run(inputs, outputs, {});
}

void LoadedExecutable::run(std::span<const void* const> inputs, std::span<void* const> outputs,
                           std::span<const std::int64_t* const> input_strides) const {
  const hlo::Block& b = impl_->exe.module.main;
  if (!input_strides.empty() && input_strides.size() != inputs.size())
    throw ExecError("the executable takes " + std::to_string(b.args.size()) + " inputs, " +
                    std::to_string(input_strides.size()) + " strides given");
  if (inputs.size() != b.args.size())
    throw ExecError("the executable takes " + std::to_string(b.args.size()) + " inputs, " +
                    std::to_string(inputs.size()) + " given");
  if (outputs.size() != b.results.size())
    throw ExecError("the executable has " + std::to_string(b.results.size()) + " outputs, " +
                    std::to_string(outputs.size()) + " buffers given");
  impl_->materialize_constants();
  const int threads = executor_threads();
  const compiler::BufferAssignment& plan = impl_->exe.buffers;
  const PooledRunVectors pooled;
  RunVectors& rv = *pooled;
  std::vector<kernels::Buf>& values = rv.values;
  values.assign(b.types.size(), kernels::Buf{});
  ScratchBuffers owned;
  // One arena holds every intermediate, at the offsets the buffer assignment planned.
  std::uint8_t* arena =
      plan.arena_bytes > 0 ? owned.take(static_cast<std::size_t>(plan.arena_bytes)) : nullptr;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    values[b.args[i]].ptr = static_cast<const std::uint8_t*>(inputs[i]);
  // A strided input: its bytes' extent, and where its elements are read from (in place, or a
  // dense copy).
  auto view_extent = [&](std::size_t i) -> std::int64_t {
    const hlo::TensorType& t = b.type(b.args[i]);
    std::int64_t last = 0;
    for (std::size_t d = 0; d < t.dims.size(); ++d) {
      if (t.dims[d] == 0) return 0;
      last += (t.dims[d] - 1) * input_strides[i][d];
    }
    return (last + 1) * hlo::dtype_size(t.dtype);
  };
  for (std::size_t i = 0; i < input_strides.size(); ++i) {
    if (input_strides[i] == nullptr) continue;
    const int a = b.args[i];
    if (impl_->reads_view_in_place[i]) {
      values[a].strides = input_strides[i];
      continue;
    }
    const hlo::TensorType& t = b.type(a);
    std::uint8_t* dense =
        owned.take(static_cast<std::size_t>(std::max<std::int64_t>(t.byte_size(), 1)));
    if (t.num_elements() > 0)
      strided_copy(dense, StridedView{0, kernels::strides_of(t.dims)}, values[a].ptr,
                   StridedView{0, std::vector<std::int64_t>(input_strides[i],
                                                            input_strides[i] + t.dims.size())},
                   t.dims, hlo::dtype_size(t.dtype), threads);
    values[a].ptr = dense;
  }
  for (std::size_t v = 0; v < impl_->constants.size(); ++v)
    if (!impl_->constants[v].empty()) values[v].ptr = impl_->constants[v].data();
  // Results computed straight into the caller's buffers. One that overlaps an input is written
  // there only when it is that input and the plan allows writing over it (donation, in-place
  // updates); any other is staged: computed in scratch and copied when everything has run.
  std::vector<std::uint8_t*>& direct = rv.direct;
  direct.assign(b.types.size(), nullptr);
  std::vector<char>& has_direct = rv.has_direct;
  has_direct.assign(b.types.size(), 0);
  std::vector<char>& staged = rv.staged;
  staged.assign(b.results.size(), 0);
  // The inputs by address, each with the furthest end of those before it: a result finds the
  // inputs it overlaps by binary search (a foreach module has hundreds of each).
  using Span = RunVectors::Span;
  std::vector<Span>& spans = rv.spans;
  spans.clear();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto* in = static_cast<const std::uint8_t*>(inputs[i]);
    const bool view = !input_strides.empty() && input_strides[i] != nullptr;
    const std::int64_t m = view ? view_extent(i) : impl_->arg_bytes[i];
    if (m > 0) spans.push_back({in, in + m, i, view});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) { return x.lo < y.lo; });
  std::vector<const std::uint8_t*>& reach = rv.reach;
  reach.resize(spans.size());
  for (std::size_t k = 0; k < spans.size(); ++k)
    reach[k] = k == 0 ? spans[k].hi : std::max(reach[k - 1], spans[k].hi);
  for (std::size_t j = 0; j < b.results.size(); ++j) {
    const int r = b.results[j];
    const auto* o = static_cast<const std::uint8_t*>(outputs[j]);
    const std::int64_t n = impl_->result_bytes[j];
    if (n > 0) {
      // spans[0, k) start before the result ends; walk back while one may reach into it.
      std::size_t k = static_cast<std::size_t>(
          std::partition_point(spans.begin(), spans.end(),
                               [&](const Span& x) { return x.lo < o + n; }) -
          spans.begin());
      while (k-- > 0 && reach[k] > o && !staged[j])
        if (spans[k].hi > o)
          staged[j] =
              spans[k].view || !(spans[k].lo == o && plan.can_write_over(j, spans[k].input));
    }
    if (!staged[j] && !impl_->is_arg[r] && !has_direct[r]) {
      direct[r] = static_cast<std::uint8_t*>(outputs[j]);
      has_direct[r] = 1;
    }
  }
  for (std::size_t j = 0; j < b.results.size(); ++j) {
    const int x = impl_->reshaped_from[j];
    if (staged[j] || x < 0 || has_direct[x]) continue;
    direct[x] = static_cast<std::uint8_t*>(outputs[j]);
    has_direct[x] = 1;
  }
  auto alloc = [&](int v) -> std::uint8_t* {
    std::uint8_t* p;
    if (has_direct[v]) {
      p = direct[v];
    } else if (plan.offset[v] >= 0) {
      p = arena + plan.offset[v];
    } else {  // a staged result
      p = owned.take(static_cast<std::size_t>(std::max<std::int64_t>(b.type(v).byte_size(), 1)));
    }
    values[v].ptr = values[v].mut = p;
    return p;
  };
  std::vector<char>& written = rv.written;
  written.assign(b.types.size(), 0);
  for (std::size_t si = 0; si < impl_->steps.size(); ++si) {
    const Step& s = impl_->steps[si];
    const hlo::Op& op = b.ops[s.op];
    if (s.chain) {
      std::vector<std::uint8_t*> outs;
      for (std::size_t j = si; j < si + s.chain_steps; ++j) {
        const Step& t = impl_->steps[j];
        if (!t.fused) {  // a reshape
          const hlo::Op& r = b.ops[t.op];
          values[r.results[0]] = values[r.operands[0]];
          continue;
        }
        const int v = t.fused->output();
        outs.push_back(alloc(v));
        written[v] = 1;
      }
      s.chain->run(values, outs, threads);
      si += s.chain_steps - 1;
      continue;
    }
    if (s.fused) {
      if (s.head >= 0) {
        const hlo::Op& dot = b.ops[s.head];
        kernels::dot_general(b, dot, values[dot.operands[0]].ptr, values[dot.operands[1]].ptr,
                             alloc(dot.results[0]));
      }
      std::uint8_t* out = alloc(s.fused->output());
      std::vector<std::uint8_t*>& extra = rv.extra;
      extra.clear();
      for (int v : s.fused->extra_outputs()) extra.push_back(alloc(v));
      s.fused->run(values, out, threads, extra);
      written[s.fused->output()] = 1;
      for (int v : s.fused->extra_outputs()) written[v] = 1;
      continue;
    }
    if (s.kernel->kind == KernelKind::kBitcast) {
      values[op.results[0]] = values[op.operands[0]];
      continue;
    }
    std::vector<const std::uint8_t*>& in = rv.op_in;
    in.clear();
    for (int v : op.operands) in.push_back(values[v].ptr);
    std::vector<std::uint8_t*>& out = rv.op_out;
    out.clear();
    for (int r : op.results) {
      out.push_back(alloc(r));
      written[r] = 1;
    }
    if (op.kind == OpKind::kCustomCall) {
      CustomCallFn fn;
      {
        std::lock_guard<std::mutex> lock(registry_mutex());
        auto it = registry().find(op.call_target_name);
        if (it == registry().end())
          throw ExecError("no kernel is registered for stablehlo.custom_call @" +
                          op.call_target_name +
                          "; register one with vtrn::runtime::register_custom_call");
        fn = it->second;
      }
      std::vector<hlo::TensorType> it, ot;
      std::vector<const void*> ip(in.begin(), in.end());
      std::vector<void*> op_(out.begin(), out.end());
      for (int v : op.operands) it.push_back(b.type(v));
      for (int r : op.results) ot.push_back(b.type(r));
      fn(CustomCallArgs{op.backend_config, it, ip, ot, op_});
      continue;
    }
    kernels::run_op(b, op, in, out, threads);
  }
  // Staged results first move to buffers of their own (one may be an input another staged
  // result overwrites), then the others are copied, then the staged ones.
  std::vector<const std::uint8_t*>& source = rv.source;
  source.assign(b.results.size(), nullptr);
  for (std::size_t j = 0; j < b.results.size(); ++j) {
    const int r = b.results[j];
    source[j] = values[r].ptr;
    if (!staged[j]) continue;
    const auto n = static_cast<std::size_t>(b.type(r).byte_size());
    std::uint8_t* copy = owned.take(std::max<std::size_t>(n, 1));
    std::memcpy(copy, source[j], n);
    source[j] = copy;
  }
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t j = 0; j < b.results.size(); ++j) {
      if (staged[j] != (pass == 1)) continue;
      const int r = b.results[j];
      if (has_direct[r] && direct[r] == outputs[j] && written[r]) continue;
      if (source[j] == outputs[j]) continue;  // a reshape of a value computed in place there
      std::memcpy(outputs[j], source[j], static_cast<std::size_t>(b.type(r).byte_size()));
    }
}

std::vector<HostTensor> LoadedExecutable::run_donating(std::vector<HostTensor> inputs) const {
  const std::vector<hlo::TensorType> in_types = input_types();
  if (inputs.size() != in_types.size())
    throw ExecError("the executable takes " + std::to_string(in_types.size()) + " inputs, " +
                    std::to_string(inputs.size()) + " given");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].type != in_types[i])
      throw ExecError("input " + std::to_string(i) + " has type " + inputs[i].type.str() +
                      ", expected " + in_types[i].str());
  const std::vector<int>& donor = impl_->exe.buffers.donor_of_result;
  std::vector<const void*> ip;
  for (const HostTensor& h : inputs) ip.push_back(h.data.data());
  std::vector<HostTensor> outs;
  std::vector<void*> op;
  for (const hlo::TensorType& t : output_types()) {
    const std::size_t j = outs.size();
    if (donor[j] >= 0) {
      // The result takes the donated input's storage (moving a vector keeps its buffer).
      HostTensor h;
      h.type = t;
      h.data = std::move(inputs[static_cast<std::size_t>(donor[j])].data);
      outs.push_back(std::move(h));
    } else {
      outs.emplace_back(t);
    }
    op.push_back(outs.back().data.data());
  }
  run(ip, op);
  return outs;
}

std::vector<HostTensor> LoadedExecutable::run(const std::vector<HostTensor>& inputs) const {
  const std::vector<hlo::TensorType> in_types = input_types();
  if (inputs.size() != in_types.size())
    throw ExecError("the executable takes " + std::to_string(in_types.size()) + " inputs, " +
                    std::to_string(inputs.size()) + " given");
  std::vector<const void*> ip;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].type != in_types[i])
      throw ExecError("input " + std::to_string(i) + " has type " + inputs[i].type.str() +
                      ", expected " + in_types[i].str());
    ip.push_back(inputs[i].data.data());
  }
  std::vector<HostTensor> outs;
  for (const hlo::TensorType& t : output_types()) outs.emplace_back(t);
  std::vector<void*> op;
  for (HostTensor& h : outs) op.push_back(h.data.data());
  run(ip, op);
  return outs;
}

}  // namespace vtrn::runtime
