#include "vtrn/compiler/executable.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

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
#include "vtrn/compiler/collective_call.h"
#include "vtrn/compiler/fused_attention.h"
#include "vtrn/compiler/grouped_mm_call.h"
#include "vtrn/compiler/passes.h"
#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/printer.h"
#include "vtrn/hlo/verify.h"
#include "vtrn/nki/registry.h"

namespace vtrn::compiler {

using hlo::Block;
using hlo::DType;
using hlo::Op;
using hlo::OpKind;
using hlo::TensorType;

std::string CompileOptions::key() const {
  return "O" + std::to_string(opt_level) + " fusion=" + (fusion ? "1" : "0");
}

double Executable::modeled_time_s() const {
  double t = 0;
  for (const Kernel& k : kernels) t += k.cost.time_s;
  return t;
}

namespace {

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

bool transcendental(OpKind k) {
  switch (k) {
    case OpKind::kExp:
    case OpKind::kExpm1:
    case OpKind::kLog:
    case OpKind::kLog1p:
    case OpKind::kLogistic:
    case OpKind::kTanh:
    case OpKind::kSqrt:
    case OpKind::kRsqrt:
    case OpKind::kPower:
    case OpKind::kSine:
    case OpKind::kCosine:
    case OpKind::kAtan2:
      return true;
    default:
      return false;
  }
}

bool complex_involved(const Block& b, const Op& op) {
  for (int v : op.operands)
    if (hlo::is_complex(b.type(v).dtype)) return true;
  for (int v : op.results)
    if (hlo::is_complex(b.type(v).dtype)) return true;
  return false;
}

// Can |op| be computed inside a fused loop?
bool fusible(const Block& b, const Op& op) {
  if (complex_involved(b, op)) return false;
  if (hlo::is_elementwise(op.kind)) return true;
  if (op.kind == OpKind::kBroadcastInDim) return true;
  if (op.kind == OpKind::kReduce)
    return op.operands.size() == 2 && op.regions.size() == 1 &&
           hlo::match_reduce_region(*op.regions[0]) != hlo::ReduceKind::kOther;
  return false;
}

// Can |op| head a fused kernel as the producer its elementwise epilogue reads? A dot_general
// with float32 accumulation (float operands and result, no float64): the executor computes it
// block by block and runs the epilogue on each block while it is in cache.
bool epilogue_head(const Block& b, const Op& op) {
  if (op.kind != OpKind::kDotGeneral || complex_involved(b, op)) return false;
  for (int v : {op.operands[0], op.operands[1], op.results[0]}) {
    const DType d = b.type(v).dtype;
    if (!hlo::is_float(d) || d == DType::kF64) return false;
  }
  return true;
}

hw::TensorEngineDType tensor_dtype(DType d) {
  switch (d) {
    case DType::kBF16:
      return hw::TensorEngineDType::kBF16;
    case DType::kF16:
      return hw::TensorEngineDType::kFP16;
    default:
      return hw::TensorEngineDType::kFP32;  // f32; f64 and integers are modeled at the FP32 peak
  }
}

// The Tensor-engine work of dot_general |op|.
void add_dot_work(const Block& b, const Op& op, cost::Work& w) {
  const TensorType& l = b.type(op.operands[0]);
  const TensorType& r = b.type(op.operands[1]);
  std::int64_t batch = 1, kk = 1;
  for (std::int64_t d : op.dot.lhs_batch) batch *= l.dims[d];
  for (std::int64_t d : op.dot.lhs_contracting) kk *= l.dims[d];
  w.batch = batch;
  w.m = l.num_elements() / (batch * kk > 0 ? batch * kk : 1);
  w.n = r.num_elements() / (batch * kk > 0 ? batch * kk : 1);
  w.k = kk;
  w.tensor_dtype = tensor_dtype(l.dtype);
}

cost::KernelCost kernel_cost(const Block& b, const Kernel& k, const cost::CostModel& model) {
  cost::Work w;
  if (k.kind == KernelKind::kBitcast || k.kind == KernelKind::kConstant) return cost::KernelCost{};
  std::set<int> inside, inputs;
  for (int i : k.ops)
    for (int r : b.ops[i].results) inside.insert(r);
  for (int i : k.ops)
    for (int v : b.ops[i].operands)
      if (!inside.count(v)) inputs.insert(v);
  for (int v : inputs) w.bytes += static_cast<double>(b.type(v).byte_size());
  const Op& root = b.ops[k.ops.back()];
  for (int r : root.results) w.bytes += static_cast<double>(b.type(r).byte_size());
  if (k.kind == KernelKind::kFused && k.ops.size() > 1) {
    // Multi-output fusion: a member's value returned or read outside the kernel is written.
    std::set<int> needed(b.results.begin(), b.results.end());
    const std::set<int> members(k.ops.begin(), k.ops.end());
    for (std::size_t i = 0; i < b.ops.size(); ++i)
      if (!members.count(static_cast<int>(i)))
        for (int v : b.ops[i].operands) needed.insert(v);
    for (std::size_t i = 0; i + 1 < k.ops.size(); ++i) {
      const Op& op = b.ops[k.ops[i]];
      if (op.kind == OpKind::kBroadcastInDim) continue;
      if (needed.count(op.results[0]))
        w.bytes += static_cast<double>(b.type(op.results[0]).byte_size());
    }
  }
  if (root.kind == OpKind::kCustomCall && root.call_target_name == nki::kCustomCallTarget) {
    // An NKI kernel: its own engine schedule's latency, which the call carries.
    const std::optional<nki::CallConfig> c = nki::parse_backend_config(root.backend_config);
    if (!c)
      throw hlo::Error("custom_call @vtrn.nki has a malformed backend_config \"" +
                       root.backend_config + "\"");
    cost::KernelCost kc;
    kc.engine = c->engine;
    kc.time_s = c->latency_s;
    return kc;
  }
  if (is_flash_attention(root)) {
    // A fused attention: the flash kernel's work (cost/attention_cost.h); the scores stay on
    // the chip, so its HBM traffic is its operands' and results'.
    const cost::AttentionShape a = flash_attention_shape(b, root);
    cost::Work fw = root.call_target_name == kFlashAttentionTarget
                        ? cost::flash_attention_forward(a)
                        : cost::flash_attention_backward(a);
    return model.estimate(fw);
  }
  // Attention through HBM: what the ops it stands for cost (attention_through_memory.h).
  if (is_attention_call(root)) return attention_call_cost(b, root, model);
  if (is_aten_addmm(root)) {
    // ATen's addmm: a float32 matmul, its bias read as the accumulator.
    const AtenAddmmShape a = aten_addmm_shape(b, root);
    w.batch = 1;
    w.m = a.m;
    w.n = a.n;
    w.k = a.k;
    w.tensor_dtype = hw::TensorEngineDType::kFP32;
    return model.estimate(w);
  }
  if (is_grouped_mm_call(root)) {
    // torch._grouped_mm: one float32 product's work over the groups together.
    const GroupedMmShape g = grouped_mm_shape(b, root);
    w.batch = 1;
    w.m = g.m;
    w.n = g.n;
    w.k = g.k;
    w.tensor_dtype = hw::TensorEngineDType::kFP32;
    return model.estimate(w);
  }
  if (is_aten_gelu(root)) {
    // GELU: an activation (its erf and exp) per element, on the Scalar engine.
    w.scalar_ops = static_cast<double>(aten_gelu_elements(b, root));
    return model.estimate(w);
  }
  if (is_aten_layer_norm(root)) {
    // ATen's layer norm: the moments (about 4 operations an element) and the output (3).
    const AtenLayerNormShape a = aten_layer_norm_shape(b, root);
    w.vector_ops = 7.0 * static_cast<double>(a.rows) * static_cast<double>(a.n);
    return model.estimate(w);
  }
  // ATen's 2-D convolution: what its convolution and bias add cost (aten_conv2d.h).
  if (is_aten_conv2d(root)) return aten_conv2d_cost(b, root, model);
  if (is_aten_conv2d_backward(root)) return aten_conv2d_backward_cost(b, root, model);
  if (is_aten_batch_norm(root)) {
    // ATen's batch norm: the channel sums and the output (about 5 operations an element), or
    // the backward's two sums and the input gradient (about 7).
    const AtenBatchNormShape a = aten_batch_norm_shape(b, root);
    w.vector_ops = (a.backward ? 7.0 : 5.0) * static_cast<double>(a.batch) *
                   static_cast<double>(a.channels) * static_cast<double>(a.per_channel);
    return model.estimate(w);
  }
  if (is_aten_softmax(root)) {
    // ATen's softmax: an exp per element (none in softmax's backward) and about three row
    // passes of Vector-engine work.
    const AtenSoftmaxShape a = aten_softmax_shape(b, root);
    const double elements = static_cast<double>(a.rows) * static_cast<double>(a.n);
    w.scalar_ops = a.config.backward && !a.config.log ? 0.0 : elements;
    w.vector_ops = 3.0 * elements;
    return model.estimate(w);
  }
  if (is_aten_group_norm(root)) {
    // ATen's group norm: the group moments and the output (about 5 operations an element), or
    // the backward's sums and the input gradient (about 8).
    const AtenGroupNormShape a = aten_group_norm_shape(b, root);
    w.vector_ops = (a.backward ? 8.0 : 5.0) * static_cast<double>(a.batch) *
                   static_cast<double>(a.channels) * static_cast<double>(a.per_channel);
    return model.estimate(w);
  }
  if (is_aten_layer_norm_backward(root)) {
    // ATen's layer norm backward: two row sums, the input gradient and the weight and bias
    // column sums (about 8 operations an element).
    const AtenLayerNormBackwardShape a = aten_layer_norm_backward_shape(b, root);
    w.vector_ops = 8.0 * static_cast<double>(a.rows) * static_cast<double>(a.n);
    return model.estimate(w);
  }
  if (is_aten_nll_loss(root)) {
    // ATen's nll_loss: a gather of one value per sample and its weighted sum.
    const AtenNllLossShape a = aten_nll_loss_shape(b, root);
    w.vector_ops = (a.weighted ? 3.0 : 2.0) * static_cast<double>(a.samples);
    return model.estimate(w);
  }
  if (is_aten_norm(root)) {
    // ATen's vector norm: a multiply (order 2) or an absolute value and an add per element.
    const AtenNormShape a = aten_norm_shape(b, root);
    w.vector_ops = 2.0 * static_cast<double>(a.rows) * static_cast<double>(a.n);
    return model.estimate(w);
  }
  if (root.kind == OpKind::kCustomCall && root.call_target_name == kCollectiveCallTarget) {
    // A collective: the collective model's time for its group, which the call carries. The
    // data moves over the collective engines' DMA rings.
    const std::optional<CollectiveCall> c = parse_collective_config(root.backend_config);
    if (!c)
      throw hlo::Error("custom_call @vtrn.collective has a malformed backend_config \"" +
                       root.backend_config + "\"");
    cost::KernelCost kc;
    kc.engine = cost::Engine::kDma;
    kc.dma_s = c->seconds;
    kc.time_s = c->seconds;
    return kc;
  }
  if (k.kind == KernelKind::kFused) {
    for (int i : k.ops) {
      const Op& op = b.ops[i];
      const double n = op.kind == OpKind::kReduce
                           ? static_cast<double>(b.type(op.operands[0]).num_elements())
                           : static_cast<double>(b.type(op.results[0]).num_elements());
      if (op.kind == OpKind::kBroadcastInDim) continue;
      if (op.kind == OpKind::kDotGeneral) {  // an epilogue's head: its result never leaves
        add_dot_work(b, op, w);
        continue;
      }
      if (transcendental(op.kind))
        w.scalar_ops += n;
      else
        w.vector_ops += n;
    }
    return model.estimate(w);
  }
  switch (root.kind) {
    case OpKind::kDotGeneral:
      add_dot_work(b, root, w);
      break;
    case OpKind::kConvolution: {
      // As the Tensor engine runs it: per group, the kernel stationary (the group's output
      // features by its input features times the window size) against every result position.
      const hlo::ConvAttrs& c = root.conv;
      const TensorType& in = b.type(root.operands[0]);
      const TensorType& kernel = b.type(root.operands[1]);
      const TensorType& out = b.type(root.results[0]);
      const std::int64_t groups = c.feature_group_count * c.batch_group_count;
      std::int64_t window = 1, positions = out.dims[c.dims.output_batch];
      for (std::int64_t d : c.dims.kernel_spatial) window *= kernel.dims[d];
      for (std::int64_t d : c.dims.output_spatial) positions *= out.dims[d];
      w.batch = groups;
      w.m = kernel.dims[c.dims.kernel_output_feature] / groups;
      w.n = positions;
      w.k = kernel.dims[c.dims.kernel_input_feature] * window;
      w.tensor_dtype = tensor_dtype(in.dtype);
      break;
    }
    case OpKind::kScatter:
      w.vector_ops = static_cast<double>(b.type(root.operands[2]).num_elements());
      break;
    case OpKind::kSort: {
      const double n = static_cast<double>(b.type(root.operands[0]).num_elements());
      const double len = static_cast<double>(b.type(root.operands[0]).dims[root.dimension]);
      w.vector_ops = n * std::max(1.0, std::log2(std::max(len, 2.0))) *
                     static_cast<double>(root.operands.size());
      break;
    }
    default:
      break;
  }
  return model.estimate(w);
}

std::vector<Kernel> form_kernels(const Block& b, bool fusion) {
  const std::size_t n = b.ops.size();
  std::vector<int> def(b.types.size(), -1);
  std::vector<std::vector<int>> users(b.types.size());
  for (std::size_t i = 0; i < n; ++i) {
    for (int r : b.ops[i].results) def[r] = static_cast<int>(i);
    for (int v : b.ops[i].operands) users[v].push_back(static_cast<int>(i));
  }
  std::set<int> returned(b.results.begin(), b.results.end());
  std::vector<int> group(n, -1);
  std::vector<std::vector<int>> groups;  // op indices
  std::vector<int> group_root;
  std::vector<bool> group_has_dot;
  for (std::size_t ri = n; ri-- > 0;) {
    if (group[ri] >= 0) continue;
    const Op& root = b.ops[ri];
    if (!fusion || !fusible(b, root)) continue;
    const int g = static_cast<int>(groups.size());
    groups.push_back({static_cast<int>(ri)});
    group_root.push_back(static_cast<int>(ri));
    group_has_dot.push_back(false);
    group[ri] = g;
    // The iteration domain: the root's result shape, or a reduce's input shape.
    const std::vector<std::int64_t> domain =
        root.kind == OpKind::kReduce ? b.type(root.operands[0]).dims : b.type(root.results[0]).dims;
    // Can |op|'s results leave a kernel rooted at |root|? Each user is in the group, runs
    // after the root, or is an elementwise sibling that can join (sibling_ok); a reduce-rooted
    // kernel has one output.
    std::function<bool(int, std::size_t, int)> sibling_ok;
    auto multi_output_ok = [&](int op, std::size_t root, int g) {
      for (int r : b.ops[op].results) {
        const bool outside =
            returned.count(r) > 0 ||
            std::any_of(users[r].begin(), users[r].end(), [&](int u) { return group[u] != g; });
        if (!outside) continue;
        if (b.ops[root].kind == OpKind::kReduce || b.ops[op].kind == OpKind::kBroadcastInDim)
          return false;
        for (int u : users[r])
          if (group[u] != g && u < static_cast<int>(root) && !sibling_ok(u, root, g)) return false;
      }
      return true;
    };
    // An ungrouped elementwise op before the root whose operands are all computed in the
    // group or before the group's kernel (outside any later kernel), and whose own results
    // are used only after the root (or returned).
    sibling_ok = [&](int u, std::size_t root, int g) {
      const Op& op = b.ops[u];
      if (group[u] >= 0 || !fusible(b, op) || op.kind == OpKind::kReduce ||
          op.kind == OpKind::kBroadcastInDim || b.ops[root].kind == OpKind::kReduce)
        return false;
      for (int r : op.results)
        if (b.type(r).dims != b.type(b.ops[root].results[0]).dims) return false;
      for (int v : op.operands)
        if (def[v] >= 0 && group[def[v]] >= 0 && group[def[v]] != g) return false;
      for (int r : op.results)
        for (int w : users[r])
          if ((group[w] != g && w < static_cast<int>(root)) ||
              (group[w] == g && b.ops[w].kind == OpKind::kDotGeneral))
            return false;
      return true;
    };
    std::vector<int> work{static_cast<int>(ri)};
    while (!work.empty()) {
      const int oi = work.back();
      work.pop_back();
      const Op& op = b.ops[oi];
      if (op.kind == OpKind::kBroadcastInDim) continue;  // its operand is read by a strided load
      const std::size_t nin = op.kind == OpKind::kReduce ? 1 : op.operands.size();
      for (std::size_t k = 0; k < nin; ++k) {
        const int v = op.operands[k];
        const int p = def[v];
        if (p < 0 || group[p] >= 0) continue;
        const Op& prod = b.ops[p];
        // One dot_general may head the kernel, its operands read from outside it.
        const bool head = !group_has_dot[g] && epilogue_head(b, prod);
        if (!head && (!fusible(b, prod) || prod.kind == OpKind::kReduce)) continue;
        if (b.type(v).dims != domain) continue;
        // (An operand of the head is read whole before the loop, so it is never computed in it.)
        bool feeds_head = false;
        for (int u : users[v])
          feeds_head = feeds_head || (group[u] == g && b.ops[u].kind == OpKind::kDotGeneral);
        if (feeds_head) continue;
        if (head) {
          if (returned.count(v)) continue;
          bool all_in = true;
          for (int u : users[v]) all_in = all_in && group[u] == g;
          if (!all_in) continue;
          group[p] = g;
          groups[g].push_back(p);
          group_has_dot[g] = true;
          continue;
        }
        // A value needed outside the kernel is one more output of it (multi-output fusion),
        // written once as the separate op would write it, when every outside user runs after
        // the kernel. An elementwise sibling that comes before the root and reads only values
        // the kernel has by then (a convert of |v| the program keeps) joins the kernel instead.
        if (!multi_output_ok(p, ri, g)) continue;
        group[p] = g;
        groups[g].push_back(p);
        work.push_back(p);
        for (int u : users[v]) {
          if (group[u] == g || u > static_cast<int>(ri) || !sibling_ok(u, ri, g)) continue;
          group[u] = g;
          groups[g].push_back(u);
          work.push_back(u);
        }
      }
    }
  }
  std::vector<Kernel> kernels;
  std::vector<bool> emitted(groups.size(), false);
  std::map<std::string, int> counts;
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = b.ops[i];
    Kernel k;
    if (group[i] >= 0) {
      // Emit a fused kernel at its root's position (all members come before it).
      const int g = group[i];
      if (group_root[g] != static_cast<int>(i)) continue;
      std::vector<int> ops = groups[g];
      std::sort(ops.begin(), ops.end());
      k.kind = KernelKind::kFused;
      k.ops = ops;
      k.name = "fusion." + std::to_string(counts["fusion"]++);
      emitted[g] = true;
    } else {
      k.kind = op.kind == OpKind::kReshape    ? KernelKind::kBitcast
               : op.kind == OpKind::kConstant ? KernelKind::kConstant
                                              : KernelKind::kOp;
      k.ops = {static_cast<int>(i)};
      const std::string base(hlo::op_name(op.kind));
      k.name = base + "." + std::to_string(counts[base]++);
    }
    kernels.push_back(std::move(k));
  }
  return kernels;
}

}  // namespace

Executable compile(const hlo::Module& input, const CompileOptions& options,
                   const cost::CostModel& model) {
  hlo::verify_module(input);
  Executable exe;
  exe.options = options;
  exe.module = input;
  renumber(exe.module.main);
  if (options.opt_level >= 2) {
    fold_constants(exe.module);
    eliminate_common_subexpressions(exe.module);
    fold_transposes_into_dots(exe.module);
  }
  if (options.opt_level >= 1) eliminate_dead_code(exe.module);
  if (options.opt_level >= 2 && options.fusion) {
    recompute_shared_differences(exe.module);
    duplicate_shared_broadcasts(exe.module);
  }
  hlo::verify_module(exe.module);
  exe.kernels = form_kernels(exe.module.main, options.fusion);
  for (Kernel& k : exe.kernels) k.cost = kernel_cost(exe.module.main, k, model);
  exe.buffers = assign_buffers(exe.module.main, exe.kernels);
  return exe;
}

//===----------------------------------------------------------------------===//
// Binary format
//===----------------------------------------------------------------------===//

std::uint64_t fnv1a64(const void* data, std::size_t size) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

constexpr char kMagic[8] = {'V', 'T', 'R', 'N', 'N', 'E', 'F', 'F'};
constexpr std::uint32_t kHeaderBytes = 32;

struct Writer {
  std::vector<std::uint8_t> out;
  template <typename T>
  void pod(T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    pod<std::uint64_t>(s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
};

struct Reader {
  std::span<const std::uint8_t> in;
  std::size_t p = 0;
  template <typename T>
  T pod() {
    if (in.size() - p < sizeof(T)) throw FormatError("executable payload is truncated");
    T v;
    std::memcpy(&v, in.data() + p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = pod<std::uint64_t>();
    if (in.size() - p < n) throw FormatError("executable payload is truncated");
    std::string s(reinterpret_cast<const char*>(in.data() + p), n);
    p += n;
    return s;
  }
};

}  // namespace

std::vector<std::uint8_t> serialize(const Executable& exe) {
  Writer w;
  w.str(kCompilerVersion);
  w.pod<std::int32_t>(exe.options.opt_level);
  w.pod<std::uint8_t>(exe.options.fusion);
  w.str(hlo::print_module(exe.module));
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(exe.kernels.size()));
  for (const Kernel& k : exe.kernels) {
    w.str(k.name);
    w.pod<std::uint8_t>(static_cast<std::uint8_t>(k.kind));
    w.pod<std::uint32_t>(static_cast<std::uint32_t>(k.ops.size()));
    for (int i : k.ops) w.pod<std::int32_t>(i);
    const cost::KernelCost& c = k.cost;
    w.pod<std::uint8_t>(static_cast<std::uint8_t>(c.engine));
    for (double d : {c.flops, c.tile_efficiency, c.tensor_s, c.vector_s, c.scalar_s, c.dma_s,
                     c.fixed_s, c.time_s})
      w.pod(d);
  }
  Writer h;
  h.out.insert(h.out.end(), kMagic, kMagic + 8);
  h.pod<std::uint32_t>(kFormatVersion);
  h.pod<std::uint32_t>(kHeaderBytes);
  h.pod<std::uint64_t>(w.out.size());
  h.pod<std::uint64_t>(fnv1a64(w.out.data(), w.out.size()));
  h.out.insert(h.out.end(), w.out.begin(), w.out.end());
  return h.out;
}

Executable deserialize(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes)
    throw FormatError("executable is truncated: " + std::to_string(bytes.size()) +
                      " bytes, the header alone is 32");
  if (std::memcmp(bytes.data(), kMagic, 8) != 0)
    throw FormatError("not a vtrn executable (bad magic)");
  Reader h{bytes.subspan(8, kHeaderBytes - 8)};
  const auto version = h.pod<std::uint32_t>();
  if (version != kFormatVersion)
    throw FormatError("executable format version " + std::to_string(version) +
                      " is not supported (this build reads version " +
                      std::to_string(kFormatVersion) + "); recompile it");
  if (h.pod<std::uint32_t>() != kHeaderBytes) throw FormatError("executable header size is wrong");
  const auto size = h.pod<std::uint64_t>();
  const auto sum = h.pod<std::uint64_t>();
  if (bytes.size() - kHeaderBytes != size)
    throw FormatError("executable payload is " + std::to_string(bytes.size() - kHeaderBytes) +
                      " bytes, the header says " + std::to_string(size) + " (truncated or padded)");
  const auto payload = bytes.subspan(kHeaderBytes);
  if (fnv1a64(payload.data(), payload.size()) != sum)
    throw FormatError("executable checksum mismatch (corrupted)");
  Reader r{payload};
  Executable exe;
  const std::string version_str = r.str();
  if (version_str != kCompilerVersion)
    throw FormatError("executable was built by '" + version_str + "', this is '" +
                      kCompilerVersion + "'");
  exe.options.opt_level = r.pod<std::int32_t>();
  exe.options.fusion = r.pod<std::uint8_t>() != 0;
  try {
    exe.module = hlo::parse_module(r.str());
  } catch (const hlo::Error& e) {
    throw FormatError(std::string("executable holds a module that does not parse: ") + e.what());
  }
  const auto nk = r.pod<std::uint32_t>();
  const std::size_t nops = exe.module.main.ops.size();
  // Every op belongs to exactly one kernel.
  if (nk > nops)
    throw FormatError("executable has " + std::to_string(nk) + " kernels for " +
                      std::to_string(nops) + " ops");
  for (std::uint32_t i = 0; i < nk; ++i) {
    Kernel k;
    k.name = r.str();
    const auto kind = r.pod<std::uint8_t>();
    if (kind > static_cast<std::uint8_t>(KernelKind::kConstant))
      throw FormatError("kernel " + k.name + " has an unknown kind " + std::to_string(kind));
    k.kind = static_cast<KernelKind>(kind);
    const auto n = r.pod<std::uint32_t>();
    if (n == 0 || n > nops) throw FormatError("kernel " + k.name + " has a bad op count");
    for (std::uint32_t j = 0; j < n; ++j) {
      const auto op = r.pod<std::int32_t>();
      if (op < 0 || static_cast<std::size_t>(op) >= nops)
        throw FormatError("kernel " + k.name + " refers to op " + std::to_string(op) + " of " +
                          std::to_string(nops));
      k.ops.push_back(op);
    }
    cost::KernelCost& c = k.cost;
    const auto engine = r.pod<std::uint8_t>();
    if (engine > static_cast<std::uint8_t>(cost::Engine::kDma))
      throw FormatError("kernel " + k.name + " has an unknown engine " + std::to_string(engine));
    c.engine = static_cast<cost::Engine>(engine);
    for (double* d : {&c.flops, &c.tile_efficiency, &c.tensor_s, &c.vector_s, &c.scalar_s, &c.dma_s,
                      &c.fixed_s, &c.time_s}) {
      *d = r.pod<double>();
      if (!std::isfinite(*d) || *d < 0)
        throw FormatError("kernel " + k.name + " has a bad modeled cost " + std::to_string(*d));
    }
    exe.kernels.push_back(std::move(k));
  }
  if (r.p != payload.size()) throw FormatError("executable payload has trailing bytes");
  // The executor trusts the kernel table (a fused kernel holds only fusible ops, each op runs
  // once, in order), so it must be the one the compiler forms for this module.
  const std::vector<Kernel> expected = form_kernels(exe.module.main, exe.options.fusion);
  if (expected.size() != exe.kernels.size())
    throw FormatError("executable has " + std::to_string(exe.kernels.size()) +
                      " kernels, its module forms " + std::to_string(expected.size()));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const Kernel& got = exe.kernels[i];
    if (got.name != expected[i].name || got.kind != expected[i].kind || got.ops != expected[i].ops)
      throw FormatError("kernel " + std::to_string(i) + " (" + got.name +
                        ") is not the kernel its module forms (" + expected[i].name + ")");
  }
  exe.buffers = assign_buffers(exe.module.main, exe.kernels);
  return exe;
}

}  // namespace vtrn::compiler
