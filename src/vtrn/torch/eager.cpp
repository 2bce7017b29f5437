// Eager kernels for lowered ATen ops: signature cache, compile cache, queued execution.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/eager.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "vtrn/runtime/compile_cache.h"
#include "vtrn/torch/lowering/lowering.h"
#include "vtrn/torch/op_tracking.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {

namespace lw = vtrn::lowering;
using hlo::DType;

//===----------------------------------------------------------------------===//
// Metrics
//===----------------------------------------------------------------------===//

namespace {

struct Counters {
  std::atomic<uint64_t> compiles{0}, memory_hits{0}, disk_hits{0}, kernels{0}, groups{0},
      fused_ops{0}, fallbacks{0};
  std::atomic<uint64_t> modeled_ps{0};  // picoseconds, so sums of small kernels stay exact
};
Counters& counters() {
  static Counters c;
  return c;
}

void count_kernel(double modeled_seconds, uint64_t fused_ops) {
  Counters& c = counters();
  c.kernels.fetch_add(1, std::memory_order_relaxed);
  c.modeled_ps.fetch_add(static_cast<uint64_t>(modeled_seconds * 1e12), std::memory_order_relaxed);
  if (fused_ops > 0) {
    c.groups.fetch_add(1, std::memory_order_relaxed);
    c.fused_ops.fetch_add(fused_ops, std::memory_order_relaxed);
  }
}

void count_cache_result(runtime::CacheSource source) {
  Counters& c = counters();
  switch (source) {
    case runtime::CacheSource::kCompiled:
      c.compiles.fetch_add(1, std::memory_order_relaxed);
      break;
    case runtime::CacheSource::kMemory:
      c.memory_hits.fetch_add(1, std::memory_order_relaxed);
      break;
    case runtime::CacheSource::kDisk:
      c.disk_hits.fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

void count_memory_hit() { counters().memory_hits.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

void count_fallback() { counters().fallbacks.fetch_add(1, std::memory_order_relaxed); }

EagerMetrics eager_metrics() {
  const Counters& c = counters();
  EagerMetrics m;
  m.compiles = c.compiles.load();
  m.memory_cache_hits = c.memory_hits.load();
  m.disk_cache_hits = c.disk_hits.load();
  m.executed_kernels = c.kernels.load();
  m.fused_groups = c.groups.load();
  m.fused_ops = c.fused_ops.load();
  m.fallbacks = c.fallbacks.load();
  m.modeled_device_time_us = static_cast<double>(c.modeled_ps.load()) * 1e-6;
  return m;
}

void reset_eager_metrics() {
  Counters& c = counters();
  for (auto* a : {&c.compiles, &c.memory_hits, &c.disk_hits, &c.kernels, &c.groups, &c.fused_ops,
                  &c.fallbacks, &c.modeled_ps})
    a->store(0);
}

//===----------------------------------------------------------------------===//
// dtypes
//===----------------------------------------------------------------------===//

namespace {

std::optional<DType> to_hlo(at::ScalarType t) {
  switch (t) {
    case at::kBool:
      return DType::kPred;
    case at::kChar:
      return DType::kI8;
    case at::kShort:
      return DType::kI16;
    case at::kInt:
      return DType::kI32;
    case at::kLong:
      return DType::kI64;
    case at::kByte:
      return DType::kU8;
    case at::kUInt16:
      return DType::kU16;
    case at::kUInt32:
      return DType::kU32;
    case at::kUInt64:
      return DType::kU64;
    case at::kHalf:
      return DType::kF16;
    case at::kBFloat16:
      return DType::kBF16;
    case at::kFloat:
      return DType::kF32;
    case at::kDouble:
      return DType::kF64;
    default:
      return std::nullopt;
  }
}

at::ScalarType to_torch(DType d) {
  switch (d) {
    case DType::kPred:
      return at::kBool;
    case DType::kI8:
      return at::kChar;
    case DType::kI16:
      return at::kShort;
    case DType::kI32:
      return at::kInt;
    case DType::kI64:
      return at::kLong;
    case DType::kU8:
      return at::kByte;
    case DType::kU16:
      return at::kUInt16;
    case DType::kU32:
      return at::kUInt32;
    case DType::kU64:
      return at::kUInt64;
    case DType::kF16:
      return at::kHalf;
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kF32:
      return at::kFloat;
    case DType::kF64:
      return at::kDouble;
    case DType::kC64:
      return at::kComplexFloat;
  }
  return at::kFloat;
}

//===----------------------------------------------------------------------===//
// Schema classification (once per op)
//===----------------------------------------------------------------------===//

enum class Slot : uint8_t {
  kTensor,        // Tensor / Tensor?: an input (also an output when mutable)
  kTensorList,    // Tensor[]
  kScalarList,    // Scalar[]: one runtime parameter per element
  kScalar,        // Scalar / Scalar?: runtime parameter unless static
  kStaticScalar,  // Scalar the entry bakes in
  kRuntimeFloat,  // float the entry passes at runtime
  kInt,           // int / SymInt (optional)
  kInts,          // int[] / SymInt[] (optional)
  kFloat,         // float (optional)
  kBool,
  kString,
  kDType,
  kIgnoredIfNone,  // layout, device, memory_format, generator...: must be None
  kOut,            // out= tensor (write only)
  kOutList,        // out= tensor list
};

struct SchemaInfo {
  std::vector<Slot> slots;
  std::vector<bool> mutable_input;  // per argument: a positional argument the op writes
  size_t num_args = 0;
  size_t num_returns = 0;
  std::vector<int> return_alias;  // per return: the argument it aliases, or -1
  bool returns_list = false;      // one Tensor[] return (functional foreach ops)
};

bool is_tensor_type(const c10::TypePtr& t) { return t->kind() == c10::TypeKind::TensorType; }

SchemaInfo classify(const c10::FunctionSchema& schema, const lw::OpLowering& entry) {
  SchemaInfo info;
  const auto& args = schema.arguments();
  info.num_args = args.size();
  auto contains = [](const std::vector<int>& v, int i) {
    return std::find(v.begin(), v.end(), i) != v.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::Argument& a = args[i];
    // real_type(): ScalarType arguments have type int in the schema, ScalarType in real_type.
    c10::TypePtr t = a.real_type();
    if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
    const bool writes = a.alias_info() != nullptr && a.alias_info()->isWrite();
    info.mutable_input.push_back(writes && !a.is_out());
    Slot s = Slot::kIgnoredIfNone;
    if (is_tensor_type(t)) {
      s = a.is_out() ? Slot::kOut : Slot::kTensor;
    } else if (auto list = t->cast<c10::ListType>()) {
      const auto elem = list->getElementType();
      if (is_tensor_type(elem))
        s = a.is_out() ? Slot::kOutList : Slot::kTensorList;
      else if (elem->kind() == c10::TypeKind::NumberType)
        s = Slot::kScalarList;
      else if (elem->kind() == c10::TypeKind::IntType || elem->kind() == c10::TypeKind::SymIntType)
        s = Slot::kInts;
    } else {
      switch (t->kind()) {
        case c10::TypeKind::NumberType:
          s = contains(entry.static_scalars, static_cast<int>(i)) ? Slot::kStaticScalar
                                                                  : Slot::kScalar;
          break;
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
          s = Slot::kInt;
          break;
        case c10::TypeKind::FloatType:
          s = contains(entry.runtime_floats, static_cast<int>(i)) ? Slot::kRuntimeFloat
                                                                  : Slot::kFloat;
          break;
        case c10::TypeKind::BoolType:
          s = Slot::kBool;
          break;
        case c10::TypeKind::StringType:
          s = Slot::kString;
          break;
        case c10::TypeKind::ScalarTypeType:
          s = Slot::kDType;
          break;
        default:
          s = Slot::kIgnoredIfNone;
          break;
      }
    }
    info.slots.push_back(s);
  }
  const auto& returns = schema.returns();
  info.num_returns = returns.size();
  info.returns_list = returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType;
  for (const c10::Argument& r : returns) {
    int alias = -1;
    if (r.alias_info() != nullptr && r.alias_info()->isWrite()) {
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].alias_info() != nullptr &&
            args[i].alias_info()->beforeSets() == r.alias_info()->beforeSets()) {
          alias = static_cast<int>(i);
          break;
        }
      }
    }
    info.return_alias.push_back(alias);
  }
  return info;
}

//===----------------------------------------------------------------------===//
// Compiled ops and launches
//===----------------------------------------------------------------------===//

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& k) const noexcept {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    for (int64_t v : k) {
      h ^= static_cast<uint64_t>(v);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

/// When an output may be written over an input it aliases (in-place ops): the writing kernel is
/// an elementwise loop (it reads element i before writing element i), and no later kernel reads
/// that input.
struct AliasSafety {
  std::vector<int> param_last_reader;    // per parameter: the last kernel reading it, or -1
  std::vector<int> result_writer;        // per result: the kernel computing it, or -1
  std::vector<bool> writer_elementwise;  // per result: that kernel is an elementwise loop

  bool can_alias(size_t result, size_t param) const {
    const int w = result_writer.at(result);
    return w >= 0 && writer_elementwise.at(result) && param_last_reader.at(param) <= w;
  }
};

AliasSafety analyze_aliasing(const compiler::Executable& exe) {
  const hlo::Block& main = exe.module.main;
  AliasSafety a;
  a.param_last_reader.assign(main.args.size(), -1);
  std::vector<int> param_of(main.types.size(), -1);   // value -> the parameter it is (or bitcasts)
  std::vector<int> kernel_of(main.types.size(), -1);  // value -> the kernel computing it
  std::vector<bool> elementwise_of(main.types.size(), false);
  for (size_t p = 0; p < main.args.size(); ++p)
    param_of[static_cast<size_t>(main.args[p])] = static_cast<int>(p);
  for (size_t k = 0; k < exe.kernels.size(); ++k) {
    const compiler::Kernel& kernel = exe.kernels[k];
    const bool bitcast = kernel.kind == compiler::KernelKind::kBitcast;
    bool elementwise = kernel.kind == compiler::KernelKind::kFused;
    for (int oi : kernel.ops)
      elementwise =
          elementwise && main.ops.at(static_cast<size_t>(oi)).kind != hlo::OpKind::kReduce;
    for (int oi : kernel.ops) {
      const hlo::Op& op = main.ops.at(static_cast<size_t>(oi));
      for (int v : op.operands) {
        const int p = param_of[static_cast<size_t>(v)];
        if (p >= 0 && !bitcast) a.param_last_reader[static_cast<size_t>(p)] = static_cast<int>(k);
      }
      for (int r : op.results) {
        if (bitcast && !op.operands.empty())
          param_of[static_cast<size_t>(r)] = param_of[static_cast<size_t>(op.operands[0])];
        kernel_of[static_cast<size_t>(r)] = bitcast ? -1 : static_cast<int>(k);
        elementwise_of[static_cast<size_t>(r)] = elementwise;
      }
    }
  }
  for (int r : main.results) {
    a.result_writer.push_back(kernel_of[static_cast<size_t>(r)]);
    a.writer_elementwise.push_back(elementwise_of[static_cast<size_t>(r)]);
  }
  return a;
}

/// What a signature resolves to: an executable, or the reason the call falls back.
struct CompiledOp {
  const lw::OpLowering* entry = nullptr;
  std::shared_ptr<const runtime::LoadedExecutable> executable;  // null: fall back
  std::shared_ptr<const hlo::Module> module;                    // the one-op module (for AEE)
  std::vector<hlo::TensorType> output_types;                    // written outputs, in order
  std::vector<bool> written;                                    // per output of the call
  AliasSafety aliasing;
  double modeled_seconds = 0;
  std::string fallback_reason;
};

/// A tensor's bytes as queued work sees them: its storage (kept alive) and the view as it was
/// when the op was issued; or an inline scalar value.
struct BufferRef {
  c10::Storage storage;
  int64_t offset = 0;  // elements
  c10::SmallVector<int64_t, 6> sizes, strides;
  at::ScalarType dtype = at::kFloat;
  bool contiguous = true;
  bool is_scalar = false;
  bool fresh = false;  // a functional op's output, allocated by this call
  alignas(8) std::array<uint8_t, 8> scalar{};

  static BufferRef of(const at::Tensor& t) {
    BufferRef b;
    b.storage = t.storage();
    b.offset = t.storage_offset();
    b.sizes.assign(t.sizes().begin(), t.sizes().end());
    b.strides.assign(t.strides().begin(), t.strides().end());
    b.dtype = t.scalar_type();
    b.contiguous = t.is_contiguous();
    return b;
  }
  char* base() const {
    return static_cast<char*>(storage.mutable_data()) +
           offset * static_cast<int64_t>(c10::elementSize(dtype));
  }
  at::Tensor cpu() const {
    return at::from_blob(base(), sizes, strides, at::TensorOptions().dtype(dtype));
  }
  int64_t numel() const { return c10::multiply_integers(sizes); }
  /// [first, last) bytes of the storage this view can touch.
  std::pair<int64_t, int64_t> byte_range() const {
    const int64_t es = static_cast<int64_t>(c10::elementSize(dtype));
    int64_t last = offset;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == 0) return {offset * es, offset * es};
      last += (sizes[i] - 1) * strides[i];
    }
    return {offset * es, (last + 1) * es};
  }
  bool same_view(const BufferRef& o) const {
    return !is_scalar && !o.is_scalar &&
           storage.unsafeGetStorageImpl() == o.storage.unsafeGetStorageImpl() &&
           offset == o.offset && dtype == o.dtype && sizes == o.sizes && strides == o.strides;
  }
  bool overlaps(const BufferRef& o) const {
    if (is_scalar || o.is_scalar ||
        storage.unsafeGetStorageImpl() != o.storage.unsafeGetStorageImpl())
      return false;
    auto [a0, a1] = byte_range();
    auto [b0, b1] = o.byte_range();
    return a0 < b1 && b0 < a1;
  }
};

BufferRef scalar_ref(const c10::IValue& v) {
  BufferRef b;
  b.is_scalar = true;
  if (v.isDouble()) {
    const double d = v.toDouble();
    std::memcpy(b.scalar.data(), &d, 8);
  } else if (v.isBool()) {
    b.scalar[0] = v.toBool() ? 1 : 0;
  } else {
    const int64_t i = v.toInt();
    std::memcpy(b.scalar.data(), &i, 8);
  }
  return b;
}

BufferRef cpu_scalar_ref(const at::Tensor& t) {
  BufferRef b;
  b.is_scalar = true;
  std::memcpy(b.scalar.data(), t.const_data_ptr(), c10::elementSize(t.scalar_type()));
  return b;
}

/// One executable run with its buffers; |outputs| are written in the executable's result order.
struct Launch {
  std::shared_ptr<const runtime::LoadedExecutable> executable;
  std::vector<BufferRef> inputs, outputs;
  std::vector<bool> staged;  // per output: written through a staging buffer

  /// Decides, for each output, whether it is written in place or through a staging buffer.
  void plan_outputs(const AliasSafety& aliasing) {
    staged.assign(outputs.size(), false);
    for (size_t j = 0; j < outputs.size(); ++j) {
      const BufferRef& o = outputs[j];
      bool stage = !o.contiguous;
      for (size_t p = 0; p < inputs.size() && !stage; ++p) {
        const BufferRef& in = inputs[p];
        if (!o.overlaps(in)) continue;
        stage = !(o.same_view(in) && in.contiguous && aliasing.can_alias(j, p));
      }
      for (size_t k = 0; k < j && !stage; ++k) stage = o.overlaps(outputs[k]);
      staged[j] = stage;
    }
  }

  void execute() const {
    std::vector<const void*> in(inputs.size());
    std::vector<at::Tensor> keep;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const BufferRef& b = inputs[i];
      if (b.is_scalar) {
        in[i] = b.scalar.data();
      } else if (b.contiguous) {
        in[i] = b.base();
      } else {
        keep.push_back(b.cpu().contiguous());
        in[i] = keep.back().const_data_ptr();
      }
    }
    std::vector<void*> out(outputs.size());
    std::vector<at::Tensor> staging(outputs.size());
    for (size_t j = 0; j < outputs.size(); ++j) {
      if (staged[j]) {
        staging[j] = at::empty(outputs[j].sizes, at::TensorOptions().dtype(outputs[j].dtype));
        out[j] = staging[j].mutable_data_ptr();
      } else {
        out[j] = outputs[j].base();
      }
    }
    executable->run(in, out);
    for (size_t j = 0; j < outputs.size(); ++j) {
      if (!staged[j]) continue;
      at::Tensor dst = outputs[j].cpu();
      at::native::copy_(dst, staging[j], false);
    }
  }
};

//===----------------------------------------------------------------------===//
// Adaptive Eager Execution: pending groups of elementwise ops
//===----------------------------------------------------------------------===//

/// One op held in a group: its one-op module and its buffers (inputs in parameter order).
struct PendingOp {
  std::shared_ptr<const CompiledOp> op;
  const char* name;  // "aten::mul.Tensor": a group of one runs under the op's own name
  std::vector<BufferRef> inputs, outputs;
};

struct PendingGroup {
  std::mutex mu;
  c10::StreamId stream = 0;
  std::vector<PendingOp> ops;
};

constexpr size_t kMaxGroupOps = 64;

PendingGroup& pending_group(int device) {
  static std::array<PendingGroup, 128> groups;
  return groups.at(static_cast<size_t>(device));
}

std::atomic<bool> any_pending{false};

// Composed executables, by the identity of their ops and wiring.
std::mutex& fused_mutex() {
  static std::mutex m;
  return m;
}
struct FusedExecutable {
  std::shared_ptr<const runtime::LoadedExecutable> executable;
  AliasSafety aliasing;
};
std::unordered_map<std::vector<int64_t>, std::shared_ptr<const FusedExecutable>, KeyHash>&
fused_cache() {
  static auto* m = new std::unordered_map<std::vector<int64_t>,
                                          std::shared_ptr<const FusedExecutable>, KeyHash>();
  return *m;
}

/// Copies |src|'s ops into |dst|, mapping src values through |map| (params pre-mapped).
/// A convert back to float32 of a value the group rounded from float32 reuses the float32
/// value: intermediates stay in float32 inside a group, as the seed describes.
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
    if (op.kind == hlo::OpKind::kConvert) {
      const DType from = dst.type(copy.operands[0]).dtype, to = dst.type(copy.results[0]).dtype;
      if (from == DType::kF32 && (to == DType::kBF16 || to == DType::kF16))
        wide[copy.results[0]] = copy.operands[0];
    }
    dst.ops.push_back(std::move(copy));
  }
}

void run_group(std::vector<PendingOp> ops, c10::DeviceIndex device, c10::StreamId stream_id);

}  // namespace

bool concatenation_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TORCH_NEURONX_ENABLE_CONCATENATION");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

void flush_pending(int device) {
  if (!any_pending.load(std::memory_order_acquire) || device < 0 || device >= 128) return;
  PendingGroup& g = pending_group(device);
  std::vector<PendingOp> ops;
  c10::StreamId stream;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    if (g.ops.empty()) return;
    ops.swap(g.ops);
    stream = g.stream;
  }
  run_group(std::move(ops), static_cast<c10::DeviceIndex>(device), stream);
}

namespace {

void enqueue_launch(c10::DeviceIndex device, const char* name, Launch launch) {
  enqueue(device, name, [l = std::move(launch)] { l.execute(); });
}

// Composes the group into one module: external buffers become parameters, a buffer written by
// an earlier op feeds later readers directly, and each buffer's final value is written once
// (or not at all, when the group's own temporary died unread).
void run_group(std::vector<PendingOp> ops, c10::DeviceIndex device, c10::StreamId stream_id) {
  const c10::StreamGuard stream_guard(
      c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::kPrivateUse1, device), stream_id));
  if (ops.size() == 1) {
    Launch l;
    l.executable = ops[0].op->executable;
    l.inputs = std::move(ops[0].inputs);
    l.outputs = std::move(ops[0].outputs);
    l.plan_outputs(ops[0].op->aliasing);
    count_kernel(ops[0].op->modeled_seconds, 0);
    enqueue_launch(device, ops[0].name, std::move(l));
    return;
  }
  // Wiring: each input is an external buffer (index into |ext|) or the latest value written to
  // a buffer by an earlier op of the group (index into |buffers|).
  std::vector<BufferRef> ext;      // external inputs, parameter order
  std::vector<BufferRef> buffers;  // buffers written in the group
  std::vector<int64_t> key;        // identity of the composition
  struct Wire {
    bool internal;
    size_t index;
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
      key.push_back(w.internal ? 1 : 0);
      key.push_back(static_cast<int64_t>(w.index));
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
      key.push_back(2);
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
    key.push_back(live[b] ? 1 : 0);
    if (live[b]) outputs.push_back(buffers[b]);
  }
  if (outputs.empty()) return;  // every result died unread

  std::shared_ptr<const FusedExecutable> exe;
  {
    std::lock_guard<std::mutex> lock(fused_mutex());
    auto it = fused_cache().find(key);
    if (it != fused_cache().end()) exe = it->second;
  }
  if (exe) {
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
        if (w.internal) {
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
  count_kernel(exe->executable->executable().modeled_time_s(), ops.size());
  enqueue_launch(device, "aten::(fused group)", std::move(l));
}

/// Queues |launch| (AEE: holds it in the device's group when it can fuse).
void submit(const std::shared_ptr<const CompiledOp>& op, Launch launch, c10::DeviceIndex device,
            const char* name) {
  const bool fusable = op->entry->elementwise && op->output_types.size() == 1 &&
                       concatenation_enabled() && !at::globalContext().deterministicAlgorithms();
  if (fusable) {
    PendingGroup& g = pending_group(device);
    const c10::StreamId stream = current_stream(device).id();
    bool conflict = false;
    std::vector<PendingOp> full;
    {
      std::lock_guard<std::mutex> lock(g.mu);
      // A partial overlap with a buffer of the group would need ordering the group can't
      // express: end the group first.
      for (const PendingOp& p : g.ops) {
        for (const BufferRef& a : p.outputs) {
          for (const BufferRef& b : launch.inputs)
            conflict = conflict || (a.overlaps(b) && !a.same_view(b));
          for (const BufferRef& b : launch.outputs)
            conflict = conflict || (a.overlaps(b) && !a.same_view(b));
        }
      }
      if (!g.ops.empty() && (conflict || g.stream != stream)) {
        full.swap(g.ops);
      }
    }
    if (!full.empty()) run_group(std::move(full), device, g.stream);
    std::vector<PendingOp> ready;
    {
      std::lock_guard<std::mutex> lock(g.mu);
      g.stream = stream;
      g.ops.push_back(PendingOp{op, name, std::move(launch.inputs), std::move(launch.outputs)});
      any_pending.store(true, std::memory_order_release);
      if (g.ops.size() >= kMaxGroupOps) ready.swap(g.ops);
    }
    if (!ready.empty()) run_group(std::move(ready), device, stream);
    return;
  }
  flush_pending(device);
  launch.plan_outputs(op->aliasing);
  count_kernel(op->modeled_seconds, 0);
  enqueue_launch(device, name, std::move(launch));
}

//===----------------------------------------------------------------------===//
// Signature cache
//===----------------------------------------------------------------------===//

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<std::vector<int64_t>, std::shared_ptr<const CompiledOp>, KeyHash>&
signature_cache() {
  static auto* m =
      new std::unordered_map<std::vector<int64_t>, std::shared_ptr<const CompiledOp>, KeyHash>();
  return *m;
}

/// VTRN_EAGER_DEBUG=1 prints why a call falls back to the CPU.
bool debug_enabled() {
  static const bool on = std::getenv("VTRN_EAGER_DEBUG") != nullptr &&
                         std::strcmp(std::getenv("VTRN_EAGER_DEBUG"), "1") == 0;
  return on;
}

int64_t double_bits(double v) {
  int64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

//===----------------------------------------------------------------------===//
// The kernel of every lowered op
//===----------------------------------------------------------------------===//

class LoweredKernel final : public c10::OperatorKernel {
 public:
  explicit LoweredKernel(const lw::OpLowering* entry)
      : entry_(entry),
        qualified_name_(entry->name.find("::") == std::string::npos ? "aten::" + entry->name
                                                                    : entry->name) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    std::call_once(schema_once_, [&] { info_ = classify(op.schema(), *entry_); });
    const size_t first = stack->size() - info_.num_args;
    thread_local std::vector<int64_t> key;
    key.clear();
    key.push_back(reinterpret_cast<intptr_t>(entry_));
    c10::DeviceIndex device = -1;
    bool empty_input = false;
    if (!describe(stack, first, key, device, empty_input)) return fallback(op, stack);

    std::shared_ptr<const CompiledOp> compiled;
    {
      std::lock_guard<std::mutex> lock(cache_mutex());
      auto it = signature_cache().find(key);
      if (it != signature_cache().end()) compiled = it->second;
    }
    if (!compiled) {
      compiled = compile(stack, first);
      std::lock_guard<std::mutex> lock(cache_mutex());
      signature_cache().emplace(key, compiled);
    } else if (compiled->executable) {
      count_memory_hit();
    }
    // Zero-size inputs: the CPU kernels define those edge cases (errors included).
    if (!compiled->executable || empty_input) return fallback(op, stack);
    run(stack, first, compiled, device);
  }

 private:
  void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    cpu_fallback(op, stack);
  }

  // Appends the call's signature to |key|. False when the call can't run here: a tensor on
  // another device, an unsupported dtype or argument (the fallback then raises PyTorch's own
  // error, or computes the op on the CPU).
  bool describe(torch::jit::Stack* stack, size_t first, std::vector<int64_t>& key,
                c10::DeviceIndex& device, bool& empty_input) const {
    auto add_tensor = [&](const at::Tensor& t) -> bool {
      if (!t.defined()) {
        key.push_back(-1);
        return true;
      }
      const auto d = to_hlo(t.scalar_type());
      if (!d) return false;
      if (t.is_cpu()) {
        if (t.dim() != 0) return false;
        key.push_back(2000 + static_cast<int64_t>(*d) * 2 +
                      (t.unsafeGetTensorImpl()->is_wrapped_number() ? 1 : 0));
        return true;
      }
      if (!t.is_privateuseone()) return false;
      if (device < 0)
        device = t.device().index();
      else if (device != t.device().index())
        return false;
      key.push_back(1000 + static_cast<int64_t>(*d));
      key.push_back(t.dim());
      for (int64_t s : t.sizes()) key.push_back(s);
      if (t.numel() == 0) empty_input = true;
      return true;
    };
    for (size_t i = 0; i < info_.num_args; ++i) {
      const c10::IValue& v = (*stack)[first + i];
      switch (info_.slots[i]) {
        case Slot::kTensor:
          if (v.isNone())
            key.push_back(-1);
          else if (!add_tensor(v.toTensor()))
            return false;
          break;
        case Slot::kTensorList: {
          if (v.isNone()) {
            key.push_back(-1);
            break;
          }
          const auto list = v.toTensorList();
          key.push_back(static_cast<int64_t>(list.size()));
          for (const at::Tensor& t : list) {
            if (!t.defined() || t.is_cpu() || !add_tensor(t)) return false;
          }
          break;
        }
        case Slot::kScalarList: {
          if (v.isNone()) {
            key.push_back(-1);
            break;
          }
          if (!v.isList()) return false;
          const auto list = v.toListRef();
          key.push_back(static_cast<int64_t>(list.size()));
          for (const c10::IValue& e : list) {
            if (e.isDouble())
              key.push_back(-2);
            else if (e.isInt())
              key.push_back(-3);
            else if (e.isBool())
              key.push_back(-4);
            else
              return false;
          }
          break;
        }
        case Slot::kScalar:
        case Slot::kRuntimeFloat:
          if (v.isNone())
            key.push_back(-1);
          else if (v.isDouble())
            key.push_back(-2);
          else if (v.isInt())
            key.push_back(-3);
          else if (v.isBool())
            key.push_back(-4);
          else
            return false;
          break;
        case Slot::kStaticScalar:
          if (v.isNone()) {
            key.push_back(-1);
            break;
          }
          if (!v.isDouble() && !v.isInt() && !v.isBool()) return false;
          key.push_back(v.isDouble() ? 0 : 1);
          key.push_back(v.isDouble() ? double_bits(v.toDouble())
                                     : (v.isInt() ? v.toInt() : v.toBool()));
          break;
        case Slot::kInt:
          if (v.isNone())
            key.push_back(INT64_MIN);
          else if (v.isInt())
            key.push_back(v.toInt());
          else
            return false;
          break;
        case Slot::kInts: {
          if (v.isNone()) {
            key.push_back(-1);
            break;
          }
          if (!v.isIntList()) return false;
          const auto ints = v.toIntList();
          key.push_back(static_cast<int64_t>(ints.size()));
          for (int64_t x : ints) key.push_back(x);
          break;
        }
        case Slot::kFloat:
          key.push_back(v.isNone() ? -1 : double_bits(v.toDouble()));
          break;
        case Slot::kBool:
          key.push_back(v.isNone() ? -1 : v.toBool());
          break;
        case Slot::kString:
          if (v.isNone()) {
            key.push_back(-1);
            break;
          }
          for (char ch : v.toStringRef()) key.push_back(ch);
          key.push_back(0);
          break;
        case Slot::kDType:
          key.push_back(v.isNone() ? -1 : v.toInt());
          break;
        case Slot::kIgnoredIfNone:
          if (!v.isNone()) return false;
          break;
        case Slot::kOut: {
          const at::Tensor& t = v.toTensor();
          if (!t.is_privateuseone() || (device >= 0 && t.device().index() != device)) return false;
          const auto d = to_hlo(t.scalar_type());
          if (!d) return false;
          key.push_back(3000 + static_cast<int64_t>(*d));
          break;
        }
        case Slot::kOutList:
          return false;
      }
    }
    return device >= 0;
  }

  static hlo::TensorType scalar_type(const c10::IValue& v) {
    return hlo::TensorType(v.isDouble() ? DType::kF64 : (v.isBool() ? DType::kPred : DType::kI64),
                           {});
  }

  // The OpCall for the arguments on |stack| (built on a signature miss only).
  lw::OpCall op_call(torch::jit::Stack* stack, size_t first) const {
    lw::OpCall call;
    auto tensor_type = [](const at::Tensor& t) {
      return hlo::TensorType(*to_hlo(t.scalar_type()), t.sizes().vec());
    };
    for (size_t i = 0; i < info_.num_args; ++i) {
      const c10::IValue& v = (*stack)[first + i];
      lw::ArgSpec a;
      switch (info_.slots[i]) {
        case Slot::kTensor:
          if (v.isNone() || !v.toTensor().defined()) break;
          a.kind = lw::ArgKind::kTensor;
          a.types = {tensor_type(v.toTensor())};
          if (v.toTensor().is_cpu()) {
            a.cpu_scalar_tensor = true;
            a.ints = {v.toTensor().unsafeGetTensorImpl()->is_wrapped_number() ? 1 : 0};
          }
          if (info_.mutable_input[i]) call.out_dtypes.push_back(a.types[0].dtype);
          break;
        case Slot::kTensorList:
          if (v.isNone()) break;
          a.kind = lw::ArgKind::kTensorList;
          for (const at::Tensor& t : v.toTensorList()) {
            a.types.push_back(tensor_type(t));
            if (info_.mutable_input[i]) call.out_dtypes.push_back(a.types.back().dtype);
          }
          break;
        case Slot::kScalar:
        case Slot::kRuntimeFloat:
          if (v.isNone()) break;
          a.kind = lw::ArgKind::kScalar;
          a.types = {scalar_type(v)};
          break;
        case Slot::kScalarList:
          if (v.isNone()) break;
          a.kind = lw::ArgKind::kScalarList;
          for (const c10::IValue& e : v.toListRef()) a.types.push_back(scalar_type(e));
          break;
        case Slot::kStaticScalar:
          if (v.isNone()) break;
          a.kind = lw::ArgKind::kFloat;
          a.real =
              v.isDouble() ? v.toDouble() : static_cast<double>(v.isInt() ? v.toInt() : v.toBool());
          a.ints = {v.isDouble() ? 0 : 1};
          break;
        case Slot::kInt:
          if (v.isNone()) break;
          a.kind = lw::ArgKind::kInt;
          a.ints = {v.toInt()};
          break;
        case Slot::kInts:
          if (v.isNone()) break;
          a.kind = lw::ArgKind::kInts;
          a.ints = v.toIntVector();
          break;
        case Slot::kFloat:
          if (v.isNone()) break;
          a.kind = lw::ArgKind::kFloat;
          a.real = v.toDouble();
          break;
        case Slot::kBool:
          if (v.isNone()) break;
          a.kind = lw::ArgKind::kBool;
          a.ints = {v.toBool() ? 1 : 0};
          break;
        case Slot::kString:
          if (v.isNone()) break;
          a.kind = lw::ArgKind::kString;
          a.text = v.toStringRef();
          break;
        case Slot::kDType: {
          if (v.isNone()) break;
          const auto d = to_hlo(static_cast<at::ScalarType>(v.toInt()));
          if (!d) throw lw::Unsupported("dtype argument");
          a.kind = lw::ArgKind::kDType;
          a.dtype = *d;
          break;
        }
        case Slot::kOut:
          call.out_dtypes.push_back(*to_hlo(v.toTensor().scalar_type()));
          break;
        case Slot::kIgnoredIfNone:
        case Slot::kOutList:
          break;
      }
      call.args.push_back(std::move(a));
    }
    return call;
  }

  std::shared_ptr<const CompiledOp> compile(torch::jit::Stack* stack, size_t first) const {
    auto compiled = std::make_shared<CompiledOp>();
    compiled->entry = entry_;
    try {
      lw::LoweredCall lowered = lw::lower_call(*entry_, op_call(stack, first));
      compiled->written = lowered.written;
      for (int v : lowered.module.main.results)
        compiled->output_types.push_back(lowered.module.main.type(v));
      runtime::CacheResult r = runtime::CompileCache::global().get_or_compile(lowered.module);
      count_cache_result(r.source);
      compiled->executable = r.executable;
      compiled->modeled_seconds = r.executable->executable().modeled_time_s();
      compiled->aliasing = analyze_aliasing(r.executable->executable());
      compiled->module = std::make_shared<hlo::Module>(std::move(lowered.module));
    } catch (const lw::Unsupported& e) {
      compiled->fallback_reason = e.what();
    } catch (const hlo::Error& e) {
      compiled->fallback_reason = e.what();
    }
    if (!compiled->executable && debug_enabled())
      std::fprintf(stderr, "[vtrn] %s falls back to the CPU: %s\n", qualified_name_.c_str(),
                   compiled->fallback_reason.c_str());
    return compiled;
  }

  // Allocates or resizes the outputs, queues the executable and leaves the returns on |stack|.
  void run(torch::jit::Stack* stack, size_t first,
           const std::shared_ptr<const CompiledOp>& compiled, c10::DeviceIndex device) {
    record_executed(qualified_name_.c_str(), seen_epoch_);
    const c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, device));
    Launch launch;
    launch.executable = compiled->executable;
    // The call's outputs: mutable inputs and out= arguments, in argument order.
    std::vector<at::Tensor> outputs;
    std::vector<bool> resizable;
    std::vector<size_t> first_output_of_arg(info_.num_args, 0);
    for (size_t i = 0; i < info_.num_args; ++i) {
      const c10::IValue& v = (*stack)[first + i];
      first_output_of_arg[i] = outputs.size();
      switch (info_.slots[i]) {
        case Slot::kTensor:
          if (v.isNone() || !v.toTensor().defined()) break;
          launch.inputs.push_back(v.toTensor().is_cpu() ? cpu_scalar_ref(v.toTensor())
                                                        : BufferRef::of(v.toTensor()));
          if (info_.mutable_input[i]) {
            outputs.push_back(v.toTensor());
            resizable.push_back(false);
          }
          break;
        case Slot::kTensorList:
          if (v.isNone()) break;
          for (const at::Tensor& t : v.toTensorList()) {
            launch.inputs.push_back(BufferRef::of(t));
            if (info_.mutable_input[i]) {
              outputs.push_back(t);
              resizable.push_back(false);
            }
          }
          break;
        case Slot::kScalar:
        case Slot::kRuntimeFloat:
          if (!v.isNone()) launch.inputs.push_back(scalar_ref(v));
          break;
        case Slot::kScalarList:
          if (!v.isNone())
            for (const c10::IValue& e : v.toListRef()) launch.inputs.push_back(scalar_ref(e));
          break;
        case Slot::kOut:
          outputs.push_back(v.toTensor());
          resizable.push_back(true);
          break;
        default:
          break;
      }
    }
    const bool functional = outputs.empty();
    if (functional) {
      for (const hlo::TensorType& type : compiled->output_types) {
        outputs.push_back(at::empty(
            type.dims,
            at::TensorOptions().dtype(to_torch(type.dtype)).device(c10::kPrivateUse1, device)));
        launch.outputs.push_back(BufferRef::of(outputs.back()));
        launch.outputs.back().fresh = true;
      }
    } else {
      TORCH_INTERNAL_ASSERT(compiled->written.size() == outputs.size(), entry_->name,
                            ": the lowering returned ", compiled->written.size(), " outputs for ",
                            outputs.size());
      size_t k = 0;
      for (size_t j = 0; j < outputs.size(); ++j) {
        if (!compiled->written[j]) continue;
        const hlo::TensorType& type = compiled->output_types[k++];
        at::Tensor& out = outputs[j];
        if (resizable[j]) {
          at::native::resize_output(out, type.dims);
        } else {
          TORCH_CHECK(out.sizes() == c10::IntArrayRef(type.dims), "output with shape ", out.sizes(),
                      " doesn't match the broadcast shape ", c10::IntArrayRef(type.dims));
        }
        launch.outputs.push_back(BufferRef::of(out));
      }
    }
    bool any_output = false;
    for (const BufferRef& o : launch.outputs) any_output = any_output || o.numel() > 0;
    if (any_output) submit(compiled, std::move(launch), device, qualified_name_.c_str());
    torch::jit::drop(*stack, info_.num_args);
    if (info_.returns_list && info_.return_alias[0] < 0) {
      c10::List<at::Tensor> list;
      for (at::Tensor& t : outputs) list.push_back(std::move(t));
      stack->push_back(std::move(list));
      return;
    }
    size_t fresh = 0;
    for (size_t r = 0; r < info_.num_returns; ++r) {
      const int alias = info_.return_alias[r];
      stack->push_back(alias >= 0 ? outputs[first_output_of_arg[static_cast<size_t>(alias)]]
                                  : outputs[fresh++]);
    }
  }

  const lw::OpLowering* entry_;
  std::string qualified_name_;
  std::once_flag schema_once_;
  SchemaInfo info_;
  std::atomic<uint64_t> seen_epoch_{0};
};

torch::CppFunction lowered_kernel(const lw::OpLowering& e) {
  return torch::CppFunction::makeFromBoxedKernel(
      c10::BoxedKernel::makeFromFunctor(std::make_unique<LoweredKernel>(&e)));
}

bool is_vtrn_op(const lw::OpLowering& e) { return e.name.rfind("vtrn::", 0) == 0; }

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const lw::OpLowering& e : lw::registry())
    if (!is_vtrn_op(e)) m.impl(e.name.c_str(), lowered_kernel(e));
}

// vtrn's own ops (attention.cpp defines them): kernels the ATen ops of this device call.
TORCH_LIBRARY_IMPL(vtrn, PrivateUse1, m) {
  for (const lw::OpLowering& e : lw::registry())
    if (is_vtrn_op(e)) m.impl(e.name.substr(6).c_str(), lowered_kernel(e));
}

}  // namespace

std::vector<std::tuple<std::string, std::vector<std::string>, std::string>> native_ops() {
  std::vector<std::tuple<std::string, std::vector<std::string>, std::string>> out;
  for (const c10::OperatorName& op :
       c10::Dispatcher::singleton().getRegistrationsForDispatchKey(c10::DispatchKey::PrivateUse1)) {
    if (op.name.rfind("aten::", 0) != 0) continue;
    const std::string name =
        op.name.substr(6) + (op.overload_name.empty() ? "" : "." + op.overload_name);
    if (const lw::OpLowering* e = lw::find_lowering(name)) {
      std::vector<std::string> dtypes;
      for (DType d : e->dtypes) dtypes.push_back(lw::torch_dtype_name(d));
      out.emplace_back(name, std::move(dtypes), "lowered");
    } else {
      // Runtime kernels (allocation, copies, views, fill, random numbers) move or fill bytes
      // of every dtype the device stores.
      out.emplace_back(
          name,
          std::vector<std::string>{"float32", "bfloat16", "float16", "float64", "int64", "int32",
                                   "int16", "int8", "uint8", "bool", "complex64"},
          "runtime");
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace vtrn::torch_adapter
