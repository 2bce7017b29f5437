// Adaptive Eager Execution: pending groups of elementwise ops, composed into one module and
// run as one executable when the group ends.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/eager/pending_group.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <unordered_map>
#include <utility>

#include <ATen/Context.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>

#include "vtrn/hlo/builder.h"
#include "vtrn/runtime/compile_cache.h"
#include "vtrn/torch/eager/metrics.h"
#include "vtrn/torch/eager/word_key.h"
#include "vtrn/torch/gil.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {

namespace eager {
namespace {

using hlo::DType;

/// One op held in a group: its one-op module and its buffers (inputs in parameter order).
struct PendingOp {
  std::shared_ptr<const CompiledOp> op;
  const char* name;  // "aten::mul.Tensor": a group of one runs under the op's own name
  std::vector<BufferRef> inputs, outputs;
};

// A device's group is shared by every thread that issues work to the device, as the stream is.
// |issue| is held from the moment an op joins the group, or the group ends, until its work is
// on the stream, so the group and the stream's queue behave as one queue: each thread's ops
// reach the stream in its issue order, and a host read, once it holds |issue|, finds every op
// issued before it either on the stream or still in the group (which it then runs). Ending a
// group enqueues it, so |issue| is recursive.
//
// Whoever holds |issue| must never need the GIL, or a thread holding the GIL and waiting for
// |issue| deadlocks: the ops a group ends with are destroyed only after |issue| is released
// (dropping the last C++ reference to a storage that Python knows takes the GIL), and every
// BufferRef made or dropped under it is a copy of one those ops still hold.
struct PendingGroup {
  std::recursive_mutex issue;
  c10::StreamId stream = 0;
  std::vector<PendingOp> ops;
};

constexpr size_t kMaxGroupOps = 64;

// A fused group's key: per op, its identity (its CompiledOp's address, which stays unique
// because the signature cache keeps every CompiledOp a call ran until exit) and then a wire
// word and an index for each input and output; then, per buffer the group writes, whether it
// is written back.
enum class WireWord : int64_t {
  kExternalInput = 0,  // then the index of the external buffer
  kInternalInput = 1,  // then the index of the group's buffer an earlier op wrote
  kOutput = 2,         // then the index of the group's buffer this output writes
  kInternalView = 3,   // then the buffer's index, the view's offset, rank, sizes and strides
};
enum class BufferWord : int64_t {
  kDropped = 0,  // a buffer the group allocated whose tensor died unread
  kWritten = 1,  // a buffer that receives its final value
};

std::array<PendingGroup, 128> groups;

PendingGroup& pending_group(int device) {
  register_fork_handlers();
  return groups.at(static_cast<size_t>(device));
}

std::atomic<bool> any_pending{false};
std::atomic<int> capture_depth{0};

bool capturing() { return capture_depth.load(std::memory_order_acquire) > 0; }

/// Whether |in| reads a view of |buf| that a capture can express inside the module: |buf| is a
/// dense buffer the group allocated, read with its own dtype.
bool viewable(const BufferRef& buf, const BufferRef& in) {
  if (in.is_scalar || !buf.fresh || !buf.contiguous || buf.dtype != in.dtype) return false;
  auto [a0, a1] = buf.byte_range();
  auto [b0, b1] = in.byte_range();
  return a0 <= b0 && b1 <= a1;
}

/// A strided view of the flat buffer |flat| (|n| elements) as slice, reshape, transpose and
/// broadcast, when its strides nest: sorted from the largest, each divides the one before and
/// |n|, and the view stays inside one period of each (a slice of q, k or v out of a fused
/// projection, the halves of a rotary embedding, a transposed slice). Such a view is a strided
/// copy in the executor, where a gather computes and reads an index per element.
std::optional<hlo::Value> strided_view(hlo::Builder& b, hlo::Value flat, int64_t n, int64_t rel,
                                       c10::ArrayRef<int64_t> sizes,
                                       c10::ArrayRef<int64_t> strides) {
  const size_t r = sizes.size();
  std::vector<size_t> real;                    // dims that move through the buffer
  std::vector<int64_t> kept_dims, kept_index;  // the view without its broadcast dims
  for (size_t i = 0; i < r; ++i) {
    if (sizes[i] == 0 || strides[i] < 0) return std::nullopt;
    if (sizes[i] != 1 && strides[i] == 0) continue;  // broadcast
    kept_dims.push_back(sizes[i]);
    kept_index.push_back(static_cast<int64_t>(i));
    if (sizes[i] != 1) real.push_back(i);
  }
  std::stable_sort(real.begin(), real.end(),
                   [&](size_t p, size_t q) { return strides[p] > strides[q]; });
  const size_t m = real.size();
  // Mixed radix of the buffer: [n / s0, s0 / s1, ..., s(m-1)].
  std::vector<int64_t> radix, start, limit, sorted_sizes;
  int64_t outer = n, rem = rel;
  for (size_t k = 0; k < m; ++k) {
    const int64_t s = strides[real[k]];
    if (s <= 0 || outer % s != 0 || (k > 0 && s >= strides[real[k - 1]])) return std::nullopt;
    radix.push_back(outer / s);
    const int64_t c = rem / s;  // rem < outer here, except the offset of the outermost dim
    rem %= s;
    if (c + sizes[real[k]] > radix.back()) return std::nullopt;
    start.push_back(c);
    limit.push_back(c + sizes[real[k]]);
    sorted_sizes.push_back(sizes[real[k]]);
    outer = s;
  }
  if (rel < 0 || rem >= outer) return std::nullopt;
  radix.push_back(outer);
  start.push_back(rem);
  limit.push_back(rem + 1);
  hlo::Value v = b.slice(b.reshape(flat, radix), start, limit);
  v = b.reshape(v, sorted_sizes);
  // Sorted order -> the view's order of its real dims.
  std::vector<size_t> order = real;
  std::sort(order.begin(), order.end());
  std::vector<int64_t> perm;
  bool identity = true;
  for (size_t i = 0; i < m; ++i) {
    const auto at =
        static_cast<int64_t>(std::find(real.begin(), real.end(), order[i]) - real.begin());
    perm.push_back(at);
    identity = identity && at == static_cast<int64_t>(i);
  }
  if (!identity) v = b.transpose(v, perm);
  v = b.reshape(v, kept_dims);
  if (kept_dims.size() != r)
    v = b.broadcast_in_dim(v, std::vector<int64_t>(sizes.begin(), sizes.end()), kept_index);
  return v;
}

}  // namespace

hlo::Module view_module(const hlo::TensorType& base, const BufferRef& buf, const BufferRef& in) {
  hlo::Builder b("view");
  hlo::Value x = b.param(base);
  const int64_t n = buf.numel(), rel = in.offset - buf.offset;
  const size_t r = in.sizes.size();
  std::vector<int64_t> dims(in.sizes.begin(), in.sizes.end());
  std::vector<int64_t> perm(r);
  for (size_t i = 0; i < r; ++i) perm[i] = static_cast<int64_t>(i);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t p, int64_t q) {
    return in.strides[static_cast<size_t>(p)] > in.strides[static_cast<size_t>(q)];
  });
  bool dense = rel == 0 && in.numel() == n;
  int64_t expect = 1;
  for (size_t i = r; i-- > 0 && dense;) {
    const size_t d = static_cast<size_t>(perm[i]);
    if (in.sizes[d] != 1 && in.strides[d] != expect) dense = false;
    expect *= in.sizes[d];
  }
  if (dense) {
    std::vector<int64_t> ordered;
    for (int64_t p : perm) ordered.push_back(in.sizes[static_cast<size_t>(p)]);
    hlo::Value v = b.reshape(x, ordered);
    std::vector<int64_t> inverse(r);
    for (size_t i = 0; i < r; ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    bool identity = true;
    for (size_t i = 0; i < r; ++i) identity = identity && inverse[i] == static_cast<int64_t>(i);
    if (!identity) v = b.transpose(v, inverse);
    return b.finish({v});
  }
  hlo::Value flat = b.reshape(x, {n});
  if (r == 0) return b.finish({b.reshape(b.slice(flat, {rel}, {rel + 1}), {})});
  if (std::optional<hlo::Value> v = strided_view(b, flat, n, rel, in.sizes, in.strides))
    return b.finish({*v});
  const hlo::TensorType it(hlo::DType::kI64, dims);
  hlo::Value idx = b.broadcast_to(b.scalar(hlo::DType::kI64, static_cast<double>(rel)), dims);
  for (size_t i = 0; i < r; ++i) {
    if (in.strides[i] == 0 || in.sizes[i] == 1) continue;
    hlo::Value stride =
        b.broadcast_to(b.scalar(hlo::DType::kI64, static_cast<double>(in.strides[i])), dims);
    idx = b.add(idx, b.mul(b.iota(it, static_cast<int64_t>(i)), stride));
  }
  std::vector<int64_t> idx_dims = dims;
  idx_dims.push_back(1);
  hlo::GatherDims g;
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = static_cast<int64_t>(r);
  return b.finish({b.gather(flat, b.reshape(idx, idx_dims), g, {1})});
}

namespace {

// The recorder set by set_group_recorder (export), if any.
std::mutex& recorder_mutex() {
  static std::mutex m;
  return m;
}
GroupRecorder& recorder() {
  static GroupRecorder r;
  return r;
}
bool record(const hlo::Module& m, const std::vector<BufferRef>& in,
            const std::vector<BufferRef>& out) {
  std::lock_guard<std::mutex> lock(recorder_mutex());
  if (!recorder()) return false;
  recorder()(m, in, out);
  return true;
}
bool recording() {
  std::lock_guard<std::mutex> lock(recorder_mutex());
  return static_cast<bool>(recorder());
}

// Composed executables, by the identity of their ops and wiring.
std::mutex& fused_mutex() {
  static std::mutex m;
  return m;
}
struct FusedExecutable {
  std::shared_ptr<const runtime::LoadedExecutable> executable;
  AliasSafety aliasing;
};
std::unordered_map<WordKey, std::shared_ptr<const FusedExecutable>, WordKeyHash>& fused_cache() {
  static auto* m =
      new std::unordered_map<WordKey, std::shared_ptr<const FusedExecutable>, WordKeyHash>();
  return *m;
}

/// Copies |src|'s ops into |dst|, mapping src values through |map| (params pre-mapped).
/// A convert back to float32 of an op's result that the op rounded from float32 reuses the
/// float32 value: intermediates stay in float32 inside a group, as "What is TorchNeuron?" warns
/// ("Fusion can change intermediate precision"). Roundings inside an op (an operand promoted to
/// bfloat16 before it is computed in float32) are the op's own arithmetic and stay. A graph
/// capture keeps every rounding, so a compiled graph computes what the same ops compute eagerly.
void inline_block(const hlo::Block& src, hlo::Block& dst, std::vector<int>& map,
                  std::unordered_map<int, int>& wide) {
  for (const hlo::Op& op : src.ops) {
    if (op.kind == hlo::OpKind::kConvert) {
      const int in = map[static_cast<size_t>(op.operands[0])];
      auto w = wide.find(in);
      if (w != wide.end() && dst.type(w->second).dtype == src.type(op.results[0]).dtype) {
        map[static_cast<size_t>(op.results[0])] = w->second;
        continue;
      }
    }
    hlo::Op copy = op;
    for (int& v : copy.operands) v = map[static_cast<size_t>(v)];
    for (int& r : copy.results) {
      const int nv = dst.add_value(src.type(r));
      map[static_cast<size_t>(r)] = nv;
      r = nv;
    }
    if (op.kind == hlo::OpKind::kConvert && !capturing() &&
        std::find(src.results.begin(), src.results.end(), op.results[0]) != src.results.end()) {
      const DType from = dst.type(copy.operands[0]).dtype, to = dst.type(copy.results[0]).dtype;
      if (from == DType::kF32 && (to == DType::kBF16 || to == DType::kF16))
        wide[copy.results[0]] = copy.operands[0];
    }
    dst.ops.push_back(std::move(copy));
  }
}

void run_group(std::vector<PendingOp>& ops, c10::DeviceIndex device, c10::StreamId stream_id);

}  // namespace
}  // namespace eager

bool concatenation_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TORCH_NEURONX_ENABLE_CONCATENATION");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// fork() copies only the calling thread. A group another thread is ending at that moment may
// hold the forking thread's ops too, and its lock would stay held in the child forever: fork
// waits until every group is on its stream.
void lock_pending_groups_for_fork() {
  for (eager::PendingGroup& g : eager::groups) g.issue.lock();
}

void unlock_pending_groups_in_parent() {
  for (auto g = eager::groups.rbegin(); g != eager::groups.rend(); ++g) g->issue.unlock();
}

void renew_pending_group_locks_in_child() {
  for (eager::PendingGroup& g : eager::groups) new (&g.issue) std::recursive_mutex();
}

void flush_pending(int device) {
  if (!eager::any_pending.load(std::memory_order_acquire) || device < 0 || device >= 128) return;
  eager::PendingGroup& g = eager::pending_group(device);
  std::vector<eager::PendingOp> ended;  // destroyed after |issue| is released
  const auto lock = lock_without_gil(g.issue);
  if (g.ops.empty()) return;
  ended.swap(g.ops);
  eager::run_group(ended, static_cast<c10::DeviceIndex>(device), g.stream);
}

namespace eager {
namespace {

// Composes the group into one module: external buffers become parameters, a buffer written by
// an earlier op feeds later readers directly, and each buffer's final value is written once
// (or not at all, when the group's own temporary died unread). Runs with the group's |issue|
// held; |ops| outlive it (see PendingGroup).
void run_group(std::vector<PendingOp>& ops, c10::DeviceIndex device, c10::StreamId stream_id) {
  const c10::StreamGuard stream_guard(
      c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::kPrivateUse1, device), stream_id));
  if (ops.size() == 1) {
    record(*ops[0].op->module, ops[0].inputs, ops[0].outputs);
    Launch l;
    l.executable = ops[0].op->executable;
    l.inputs = std::move(ops[0].inputs);
    l.outputs = std::move(ops[0].outputs);
    l.plan_outputs(ops[0].op->aliasing);
    l.run = count_kernel(ops[0].op->modeled_seconds, 0, l.executable->executable());
    enqueue_launch(device, ops[0].name, std::move(l));
    return;
  }
  // Wiring: each input is an external buffer (index into |ext|) or the latest value written to
  // a buffer by an earlier op of the group (index into |buffers|).
  std::vector<BufferRef> ext;      // external inputs, parameter order
  std::vector<BufferRef> buffers;  // buffers written in the group
  WordKey key;                     // identity of the composition
  struct Wire {
    bool internal;
    size_t index;
    bool view = false;  // internal: a view of the buffer, not the buffer itself
  };
  std::vector<std::vector<Wire>> wiring(ops.size());
  std::vector<int> last_writer;  // per buffer: the op that wrote it last
  for (size_t k = 0; k < ops.size(); ++k) {
    key.push_back(reinterpret_cast<intptr_t>(ops[k].op.get()));
    for (const BufferRef& in : ops[k].inputs) {
      Wire w{false, 0};
      bool found = false;
      for (size_t b = 0; b < buffers.size() && !found; ++b) {
        if (buffers[b].same_view(in)) {
          w = {true, b};
          found = true;
        }
      }
      for (size_t b = buffers.size(); b-- > 0 && !found && capturing();) {
        if (buffers[b].overlaps(in) && viewable(buffers[b], in)) {
          w = {true, b, true};
          found = true;
        }
      }
      if (!found) {
        for (size_t e = 0; e < ext.size() && !found; ++e) {
          if (!in.is_scalar && ext[e].same_view(in)) {
            w = {false, e};
            found = true;
          }
        }
      }
      if (!found) {
        w = {false, ext.size()};
        ext.push_back(in);
      }
      wiring[k].push_back(w);
      key.push_back(static_cast<int64_t>(
          w.view ? WireWord::kInternalView
                 : (w.internal ? WireWord::kInternalInput : WireWord::kExternalInput)));
      key.push_back(static_cast<int64_t>(w.index));
      if (w.view) {
        key.push_back(in.offset - buffers[w.index].offset);
        key.push_back(static_cast<int64_t>(in.sizes.size()));
        for (int64_t v : in.sizes) key.push_back(v);
        for (int64_t v : in.strides) key.push_back(v);
      }
    }
    for (const BufferRef& out : ops[k].outputs) {
      size_t b = 0;
      while (b < buffers.size() && !buffers[b].same_view(out)) ++b;
      if (b == buffers.size()) {
        buffers.push_back(out);
        last_writer.push_back(static_cast<int>(k));
      } else {
        last_writer[b] = static_cast<int>(k);
      }
      key.push_back(static_cast<int64_t>(WireWord::kOutput));
      key.push_back(static_cast<int64_t>(b));
    }
  }
  // A buffer a functional op of this group allocated, that nothing outside the group refers
  // to any more (the tensor died before the group ran), is not written. Only such buffers are
  // candidates: no queued work can hold them, so the answer depends on the program alone, not
  // on timing. Any other buffer is written.
  std::vector<bool> live(buffers.size(), true);
  for (size_t b = 0; b < buffers.size(); ++b) {
    if (!buffers[b].fresh) continue;
    const auto* impl = buffers[b].storage.unsafeGetStorageImpl();
    size_t held = 0;
    for (const PendingOp& op : ops) {
      for (const BufferRef& r : op.inputs)
        held += !r.is_scalar && r.storage.unsafeGetStorageImpl() == impl;
      for (const BufferRef& r : op.outputs) held += r.storage.unsafeGetStorageImpl() == impl;
    }
    for (const BufferRef& r : buffers) held += r.storage.unsafeGetStorageImpl() == impl;
    live[b] = static_cast<size_t>(buffers[b].storage.use_count()) > held;
  }
  std::vector<BufferRef> outputs;
  for (size_t b = 0; b < buffers.size(); ++b) {
    key.push_back(static_cast<int64_t>(live[b] ? BufferWord::kWritten : BufferWord::kDropped));
    if (live[b]) outputs.push_back(buffers[b]);
  }
  if (outputs.empty()) return;  // every result died unread

  std::shared_ptr<const FusedExecutable> exe;
  {
    std::lock_guard<std::mutex> lock(fused_mutex());
    auto it = fused_cache().find(key);
    if (it != fused_cache().end()) exe = it->second;
  }
  if (exe && !recording()) {
    count_memory_hit();
  } else {
    hlo::Module m;
    m.name = "aee_group";
    hlo::Block& dst = m.main;
    std::vector<int> ext_value;
    for (const BufferRef& e : ext) {
      (void)e;
      ext_value.push_back(-1);
    }
    std::vector<int> buffer_value(buffers.size(), -1);
    std::unordered_map<int, int> wide;
    for (size_t k = 0; k < ops.size(); ++k) {
      const hlo::Block& src = ops[k].op->module->main;
      std::vector<int> map(src.types.size(), -1);
      for (size_t p = 0; p < src.args.size(); ++p) {
        const Wire& w = wiring[k][p];
        if (w.view) {
          const hlo::Module vm =
              view_module(dst.type(buffer_value[w.index]), buffers[w.index], ops[k].inputs[p]);
          std::vector<int> vmap(vm.main.types.size(), -1);
          vmap[static_cast<size_t>(vm.main.args[0])] = buffer_value[w.index];
          inline_block(vm.main, dst, vmap, wide);
          map[static_cast<size_t>(src.args[p])] = vmap[static_cast<size_t>(vm.main.results[0])];
        } else if (w.internal) {
          map[static_cast<size_t>(src.args[p])] = buffer_value[w.index];
        } else {
          if (ext_value[w.index] < 0) {
            ext_value[w.index] = dst.add_value(src.type(src.args[p]));
          }
          map[static_cast<size_t>(src.args[p])] = ext_value[w.index];
        }
      }
      inline_block(src, dst, map, wide);
      size_t r = 0;
      for (const BufferRef& out : ops[k].outputs) {
        size_t b = 0;
        while (!buffers[b].same_view(out)) ++b;
        buffer_value[b] = map[static_cast<size_t>(src.results[r++])];
      }
    }
    // Parameters are numbered first in a block: renumber so the externals come first.
    hlo::Block ordered;
    std::vector<int> renum(dst.types.size(), -1);
    for (int v : ext_value) {
      renum[static_cast<size_t>(v)] = ordered.add_value(dst.type(v));
      ordered.args.push_back(renum[static_cast<size_t>(v)]);
    }
    for (hlo::Op op : dst.ops) {
      for (int& v : op.operands) v = renum[static_cast<size_t>(v)];
      for (int& r : op.results) {
        const int nv = ordered.add_value(dst.type(r));
        renum[static_cast<size_t>(r)] = nv;
        r = nv;
      }
      ordered.ops.push_back(std::move(op));
    }
    for (size_t b = 0; b < buffers.size(); ++b)
      if (live[b]) ordered.results.push_back(renum[static_cast<size_t>(buffer_value[b])]);
    m.main = std::move(ordered);
    record(m, ext, outputs);
    runtime::CacheResult r = runtime::CompileCache::global().get_or_compile(m);
    count_cache_result(r.source);
    auto fused = std::make_shared<FusedExecutable>();
    fused->executable = r.executable;
    fused->aliasing = analyze_aliasing(r.executable->executable());
    exe = fused;
    std::lock_guard<std::mutex> lock(fused_mutex());
    fused_cache().emplace(key, exe);
  }
  Launch l;
  l.executable = exe->executable;
  l.inputs = std::move(ext);
  l.outputs = std::move(outputs);
  l.plan_outputs(exe->aliasing);
  l.run = count_kernel(exe->executable->executable().modeled_time_s(), ops.size(),
                       exe->executable->executable());
  enqueue_launch(device, "aten::(fused group)", std::move(l));
}

}  // namespace

/// Queues |launch| (AEE: holds it in the device's group when it can fuse).
void submit(const std::shared_ptr<const CompiledOp>& op, Launch launch, c10::DeviceIndex device,
            const char* name) {
  const bool capture = capturing();
  const bool fusable =
      op->module != nullptr &&
      (capture || (op->entry->elementwise && op->output_types.size() == 1 &&
                   concatenation_enabled() && !at::globalContext().deterministicAlgorithms()));
  if (fusable) {
    PendingGroup& g = pending_group(device);
    const c10::StreamId stream = current_stream(device).id();
    std::vector<PendingOp> ended, full;  // groups this call ran; destroyed after |issue|
    const auto lock = lock_without_gil(g.issue);
    // A partial overlap with a buffer of the group would need ordering the group can't
    // express: end the group first.
    bool conflict = false;
    for (const PendingOp& p : g.ops) {
      for (const BufferRef& a : p.outputs) {
        for (const BufferRef& b : launch.inputs)
          conflict = conflict || (a.overlaps(b) && !a.same_view(b) && !(capture && viewable(a, b)));
        for (const BufferRef& b : launch.outputs)
          conflict = conflict || (a.overlaps(b) && !a.same_view(b));
      }
    }
    if (!g.ops.empty() && (conflict || g.stream != stream)) {
      ended.swap(g.ops);
      run_group(ended, device, g.stream);
    }
    g.stream = stream;
    g.ops.push_back(PendingOp{op, name, std::move(launch.inputs), std::move(launch.outputs)});
    any_pending.store(true, std::memory_order_release);
    if (g.ops.size() >= kMaxGroupOps && !capture) {
      full.swap(g.ops);
      run_group(full, device, stream);
    }
    return;
  }
  flush_pending(device);
  launch.plan_outputs(op->aliasing);
  launch.run = count_kernel(op->modeled_seconds, 0, op->executable->executable());
  enqueue_launch(device, name, std::move(launch));
}

}  // namespace eager

void set_group_recorder(GroupRecorder r) {
  std::lock_guard<std::mutex> lock(eager::recorder_mutex());
  eager::recorder() = std::move(r);
}

void begin_graph_capture() { eager::capture_depth.fetch_add(1, std::memory_order_acq_rel); }

bool graph_capture_active() { return eager::capturing(); }

void end_graph_capture(int device) {
  flush_pending(device);
  eager::capture_depth.fetch_sub(1, std::memory_order_acq_rel);
}

}  // namespace vtrn::torch_adapter
