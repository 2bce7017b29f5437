#include "vtrn/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "vtrn/coll/model.h"
#include "vtrn/coll/placement_search.h"
#include "vtrn/coll/route.h"
#include "vtrn/cost/kernel_cost.h"
#include "vtrn/hw/device_memory.h"
#include "vtrn/topo/link_graph.h"
#include "vtrn/topo/mesh.h"

namespace vtrn::plan {

// ------------------------------------------------------------------------------------------
// Names

std::string_view precision_name(Precision p) {
  return p == Precision::kBF16 ? "bf16" : "bf16-fp32-master";
}
std::string_view checkpointing_name(Checkpointing c) {
  switch (c) {
    case Checkpointing::kNone:
      return "none";
    case Checkpointing::kSelective:
      return "selective";
    case Checkpointing::kFull:
      return "full";
  }
  return "?";
}
std::string_view schedule_name(Schedule s) { return s == Schedule::kGPipe ? "gpipe" : "1f1b"; }

Precision parse_precision(std::string_view name) {
  if (name == "bf16-fp32-master" || name == "mixed") return Precision::kBF16MixedFP32Master;
  if (name == "bf16") return Precision::kBF16;
  throw std::invalid_argument(
      "unknown precision '" + std::string(name) +
      "'; use bf16-fp32-master (bf16 compute, fp32 master weights and optimizer state) or bf16");
}
Checkpointing parse_checkpointing(std::string_view name) {
  if (name == "none") return Checkpointing::kNone;
  if (name == "selective") return Checkpointing::kSelective;
  if (name == "full") return Checkpointing::kFull;
  throw std::invalid_argument("unknown checkpointing '" + std::string(name) +
                              "'; use none, selective or full");
}
Schedule parse_schedule(std::string_view name) {
  if (name == "1f1b") return Schedule::k1F1B;
  if (name == "gpipe") return Schedule::kGPipe;
  throw std::invalid_argument("unknown pipeline schedule '" + std::string(name) +
                              "'; use 1f1b or gpipe");
}

std::vector<std::string> Layout::mesh_axes() const {
  std::vector<std::string> out;
  if (pp > 1) out.push_back("pp");
  if (replicate > 1) out.push_back("replicate");
  if (shard > 1) out.push_back("shard");
  if (tp > 1) out.push_back("tp");
  if (out.empty()) out.push_back("shard");
  return out;
}

std::vector<int> Layout::mesh_shape() const {
  std::vector<int> out;
  if (pp > 1) out.push_back(pp);
  if (replicate > 1) out.push_back(replicate);
  if (shard > 1) out.push_back(shard);
  if (tp > 1) out.push_back(tp);
  if (out.empty()) out.push_back(1);
  return out;
}

std::string Layout::describe() const {
  return "pp=" + std::to_string(pp) + ",replicate=" + std::to_string(replicate) +
         ",shard=" + std::to_string(shard) + ",tp=" + std::to_string(tp);
}

Layout parse_layout(std::string_view text) {
  Layout l;
  l.micro_batch = 0;  // 0: let the caller choose
  std::string s(text);
  std::stringstream ss(s);
  std::string part;
  bool any = false;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    const auto eq = part.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument("layout part '" + part +
                                  "' has no '='; write e.g. pp=1,replicate=1,shard=64,tp=8");
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "checkpointing") {
      l.checkpointing = parse_checkpointing(value);
      continue;
    }
    int v = 0;
    try {
      size_t used = 0;
      v = std::stoi(value, &used);
      if (used != value.size()) throw std::invalid_argument("");
    } catch (...) {
      throw std::invalid_argument("layout part '" + part + "': '" + value + "' is not an integer");
    }
    if (v < 1)
      throw std::invalid_argument("layout part '" + part + "': degrees must be at least 1");
    if (key == "pp")
      l.pp = v;
    else if (key == "replicate" || key == "dp")
      l.replicate = v;
    else if (key == "shard" || key == "fsdp")
      l.shard = v;
    else if (key == "tp")
      l.tp = v;
    else if (key == "micro_batch" || key == "mb")
      l.micro_batch = v;
    else
      throw std::invalid_argument("layout part '" + part + "': unknown key '" + key +
                                  "'; use pp, replicate, shard, tp, micro_batch, checkpointing");
    any = true;
  }
  if (!any) throw std::invalid_argument("empty layout; write e.g. pp=1,replicate=1,shard=64,tp=8");
  return l;
}

// ------------------------------------------------------------------------------------------
// Activations (Korthikanti et al. 2022, section 4.1, generalized; see the header)

double activation_bytes_per_layer(const ModelSpec& m, int seq, int b, int tp, bool sp,
                                  Checkpointing c) {
  const double s = seq, bb = b, h = m.hidden, a = m.heads, t = tp;
  const double q = m.attention_dim(), kv = m.kv_dim();
  const double sbh = s * bb * h;
  if (c == Checkpointing::kFull) return 2 * sbh / (sp ? t : 1);  // the block's bf16 input only
  // Kept whole on every TP rank without SP: the two norm inputs (2 bytes each), the inputs of
  // the QKV and first MLP linears (2 each), and the 1-byte dropout masks after attention and MLP.
  const double masks = m.dropout ? 2 * sbh : 0;
  const double replicated = 4 * sbh + 2 * sbh + 2 * sbh + masks;
  // Split by TP: Q (2 s b q), K and V (2 s b kv each), the output projection's input (2 s b q).
  double split = s * bb * (2 * q + 4 * kv + 2 * q);
  // MLP intermediates: GELU keeps its input and output (2 s b f each); SwiGLU keeps gate, up,
  // SiLU(gate) and their product (2 s b f each). MoE: top_k experts' worth per token.
  const double f = m.is_moe() ? static_cast<double>(m.expert_ffn) * m.top_k : m.ffn;
  split += s * bb * f * (m.activation == Activation::kGELU ? 4 : 8);
  if (m.is_moe()) split += s * bb * m.experts * 4;  // router logits in fp32
  double scores = 0;
  if (c == Checkpointing::kNone) {
    // softmax output (2 a s^2 b), and with dropout its 1-byte mask and output (a s^2 b + 2 a s^2 b)
    scores = a * s * s * bb * (m.dropout ? 5 : 2);
  }
  if (sp) return (replicated + split + scores) / t;
  return replicated + (split + scores) / t;
}

// ------------------------------------------------------------------------------------------
// Planner

namespace {

constexpr double kGiB = 1073741824.0;

struct Bytes {
  double param, grad, opt, reduce;  // persistent per element; gradient reduction dtype
};

Bytes bytes_of(Precision p) {
  if (p == Precision::kBF16) return {2, 2, 4, 2};
  return {4, 4, 8,
          4};  // fp32 master weights, fp32 gradients, AdamW m and v in fp32; reduce in fp32
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string gib(double bytes) { return fmt("%.1f GiB", bytes / kGiB); }

}  // namespace

// Routing of one factorization: the worst group's route of each axis (by the modeled time of
// a probe all-gather), whether every group is routable, and the placement used.
struct Planner::Routing {
  bool routable = true;
  bool custom = false;
  std::vector<int> placement;
  std::string error;
  std::optional<coll::Route> pp, replicate, shard, tp;
};

Planner::Planner(ModelSpec model, const topo::Cluster& cluster, Workload workload)
    : model_(std::move(model)), cluster_(cluster), workload_(workload) {
  model_.validate();
  if (workload_.seq < 1)
    throw std::invalid_argument("sequence length " + std::to_string(workload_.seq) +
                                " must be at least 1");
  if (workload_.global_batch < 1)
    throw std::invalid_argument("global batch " + std::to_string(workload_.global_batch) +
                                " must be at least 1 sequence");
  if (workload_.prefetch < 0) throw std::invalid_argument("prefetch must be 0 or more FSDP units");
}

double Planner::budget_bytes() const {
  return static_cast<double>(cluster_.spec().hbm_per_rank(cluster_.lnc()));
}

double Planner::peak_flops_per_rank() const {
  return cluster_.spec().chip->core.tensor(hw::DType::kBF16) * std::max(cluster_.lnc(), 1);
}

namespace {

struct Stage {
  int layers;
  bool first, last;
};

// Elements of parameters one rank of a stage holds before FSDP sharding (after TP).
struct StageParams {
  double blocks;  // transformer blocks: linear weights / tp, norms whole
  double root;    // embedding / head / final norm on this stage, vocab-parallel over tp
  double unit;    // one block / tp (the FSDP unit)
};

StageParams stage_params(const ModelSpec& m, const Stage& st, int tp, int pp) {
  const double norms = static_cast<double>(m.block_norm_params());
  const double block = static_cast<double>(m.block_params()) - norms;
  StageParams p;
  p.unit = block / tp + norms;
  p.blocks = st.layers * p.unit;
  p.root = 0;
  const double vh = static_cast<double>(m.vocab) * m.hidden;
  if (st.first) p.root += vh / tp + static_cast<double>(m.position_embeddings) * m.hidden;
  if (st.last) {
    p.root += static_cast<double>(m.final_norm_params());
    if (!m.tied_embeddings)
      p.root += vh / tp;
    else if (pp > 1)
      p.root += vh / tp;  // the last stage keeps its own copy of a tied embedding
  }
  return p;
}

std::vector<Stage> stages_of(const ModelSpec& m, int pp) {
  const int per = (m.layers + pp - 1) / pp;
  if (pp == 1) return {{m.layers, true, true}};
  // Stages of ceil(L / pp) blocks; the last may hold fewer, but the worst case is what must fit.
  return {{per, true, false}, {per, false, true}};
}

}  // namespace

MemoryBreakdown Planner::memory(const Layout& l) const {
  const Bytes by = bytes_of(workload_.precision);
  const int s = workload_.seq, b = l.micro_batch, tp = l.tp;
  const bool sp = workload_.sequence_parallel && tp > 1;
  const double T = static_cast<double>(s) * b;
  const int dp = l.dp();
  const int local = dp > 0 ? workload_.global_batch / dp : 0;
  const int micro = std::max(1, local / std::max(b, 1));
  MemoryBreakdown best;
  best.total = -1;
  for (const Stage& st : stages_of(model_, l.pp)) {
    MemoryBreakdown mb;
    const StageParams p = stage_params(model_, st, tp, l.pp);
    const double persistent_elems = (p.blocks + p.root) / l.shard;
    mb.parameters = persistent_elems * by.param;
    mb.gradients = persistent_elems * by.grad;
    mb.optimizer = persistent_elems * by.opt;
    if (l.shard > 1) {
      // current + prefetched units in bf16, one unit's unsharded gradient (bf16, plus the
      // reduce-scatter's fp32 copy under the mixed policy), and the root unit (embedding / head),
      // which FSDP2 keeps gathered from forward to backward.
      const double grad_unit = 2 + (workload_.precision == Precision::kBF16 ? 0 : by.reduce);
      mb.gathered = p.unit * (2.0 * (1 + workload_.prefetch) + grad_unit) + p.root * 2;
    } else if (workload_.precision != Precision::kBF16) {
      mb.gathered = p.unit * 2;  // autocast's bf16 copy of the block computing
    }
    int inflight = 1;
    if (l.pp > 1) inflight = workload_.schedule == Schedule::kGPipe ? micro : std::min(micro, l.pp);
    mb.activations =
        inflight * st.layers * activation_bytes_per_layer(model_, s, b, tp, sp, l.checkpointing);
    if (l.checkpointing ==
        Checkpointing::kFull)  // the block being recomputed (flash-style attention)
      mb.activations += activation_bytes_per_layer(model_, s, b, tp, sp, Checkpointing::kSelective);
    if (st.last)
      mb.logits =
          T * model_.vocab / tp * (2 + 4 + 4);  // bf16 logits, fp32 loss copy, fp32 gradient
    mb.runtime =
        static_cast<double>(hw::kRuntimeReservedPerPhysicalCore) * std::max(cluster_.lnc(), 1);
    if (tp > 1)
      mb.collectives +=
          2 * T * model_.hidden * 2;  // SP all-gather / all-reduce staging, double-buffered
    if (l.pp > 1) mb.collectives += 2 * T * model_.hidden * 2 / (sp ? tp : 1);  // send + recv
    if (l.replicate > 1)
      mb.collectives += (l.shard > 1 ? p.unit / l.shard * by.reduce
                                     : 2.0 * 25 * 1048576);  // HSDP unit / DDP buckets
    mb.total = mb.parameters + mb.gradients + mb.optimizer + mb.gathered + mb.activations +
               mb.logits + mb.runtime + mb.collectives;
    if (mb.total > best.total) best = mb;
  }
  best.budget = budget_bytes();
  return best;
}

namespace {

// Modeled time of the kernels of one block's forward on one logical core.
struct BlockTimes {
  double fwd_block = 0;   // one block forward
  double attn_core = 0;   // scores, softmax, attention x V (selective recompute)
  double logits_fwd = 0;  // output projection and loss
  double fwd_flops_block = 0;
};

double run(const cost::CostModel& cm, double lnc, std::int64_t batch, std::int64_t m,
           std::int64_t n, std::int64_t k, double* flops = nullptr) {
  cost::Work w;
  w.batch = batch;
  w.m = m;
  w.n = n;
  w.k = k;
  w.tensor_dtype = hw::DType::kBF16;
  w.bytes = 2.0 * batch *
            (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n);
  const cost::KernelCost c = cm.estimate(w);
  if (flops) *flops += c.flops;
  return c.fixed_s + (c.time_s - c.fixed_s) / lnc;
}

double elementwise(const cost::CostModel& cm, double lnc, double vector_ops, double scalar_ops,
                   double bytes) {
  cost::Work w;
  w.vector_ops = vector_ops;
  w.scalar_ops = scalar_ops;
  w.bytes = bytes;
  const cost::KernelCost c = cm.estimate(w);
  return c.fixed_s + (c.time_s - c.fixed_s) / lnc;
}

BlockTimes block_times(const ModelSpec& md, const topo::Cluster& cl, int seq, int b, int tp,
                       bool sp) {
  const cost::CostModel cm(*cl.spec().chip);
  const double lnc = std::max(cl.lnc(), 1);
  BlockTimes t;
  const std::int64_t T = static_cast<std::int64_t>(seq) * b;
  const std::int64_t h = md.hidden, q = md.attention_dim(), kv = md.kv_dim(), hd = md.head_size();
  const std::int64_t heads = std::max<std::int64_t>(1, md.heads / tp);
  const double Tsp = sp ? static_cast<double>(T) / tp : static_cast<double>(T);
  double fl = 0;
  // Linear layers: weights stationary (m = output features, k = input features), tokens moving.
  t.fwd_block += run(cm, lnc, 1, (q + 2 * kv) / tp, T, h, &fl);
  // Causal attention: half the score matrix (n = s/2 keys per query on average).
  double core = 0;
  core += run(cm, lnc, b * heads, seq, std::max<std::int64_t>(1, seq / 2), hd, &fl);
  core += elementwise(cm, lnc, 4.0 * b * heads * seq * (seq / 2.0),
                      1.0 * b * heads * seq * (seq / 2.0), 0);
  core += run(cm, lnc, b * heads, hd, seq, std::max<std::int64_t>(1, seq / 2), &fl);
  t.attn_core = core;
  t.fwd_block += core;
  t.fwd_block += run(cm, lnc, 1, h, T, q / tp, &fl);
  // MLP (dense or top_k experts' worth of tokens spread over the experts).
  const int glu = md.activation == Activation::kSwiGLU ? 2 : 1;
  if (md.is_moe()) {
    const std::int64_t fe = md.expert_ffn / tp;
    const std::int64_t tok = std::max<std::int64_t>(1, T * md.top_k / md.experts);
    t.fwd_block += run(cm, lnc, 1, md.experts, T, h, &fl);  // router
    t.fwd_block += run(cm, lnc, md.experts, glu * fe, tok, h, &fl);
    t.fwd_block += run(cm, lnc, md.experts, h, tok, fe, &fl);
    t.fwd_block += elementwise(cm, lnc, 2.0 * T * md.top_k * fe, 1.0 * T * md.top_k * fe, 0);
  } else {
    const std::int64_t f = md.ffn / tp;
    t.fwd_block += run(cm, lnc, 1, glu * f, T, h, &fl);
    t.fwd_block += run(cm, lnc, 1, h, T, f, &fl);
    t.fwd_block += elementwise(cm, lnc, 2.0 * T * f, 1.0 * T * f, 2.0 * 3 * T * f);
  }
  // Two norms (about 5 vector ops per element) and two residual adds, on the SP share.
  t.fwd_block += elementwise(cm, lnc, 12.0 * Tsp * h, 2.0 * Tsp, 2.0 * 6 * Tsp * h);
  t.fwd_flops_block = fl;
  const std::int64_t v = std::max<std::int64_t>(1, md.vocab / tp);
  t.logits_fwd =
      run(cm, lnc, 1, v, T, h) + elementwise(cm, lnc, 3.0 * T * v, 1.0 * T * v, 4.0 * 2 * T * v);
  return t;
}

}  // namespace

Evaluation Planner::evaluate(const Layout& layout, bool search_placement) const {
  if (layout.world() != cluster_.world())
    throw std::invalid_argument("layout " + layout.describe() + " has " +
                                std::to_string(layout.world()) + " ranks but " +
                                cluster_.describe() + " has " + std::to_string(cluster_.world()) +
                                "; the degrees must multiply to the world size");
  Layout l = layout;
  if (l.micro_batch < 1) l.micro_batch = 1;
  Routing r;
  route(l, search_placement, r);
  return evaluate_routed(l, r);
}

}  // namespace vtrn::plan

namespace vtrn::plan {

namespace {

// What route_group's answer depends on: the group's node-local chip sets, the ranks it has on
// each chip, and (in an UltraServer, where NeuronLink joins nodes) which nodes. Groups with the
// same signature route alike, so each is routed once.
std::string signature(const topo::Cluster& cl, const std::vector<int>& grp) {
  std::map<int, std::pair<topo::ChipMask, std::map<int, int>>> per_node;
  for (int r : grp) {
    const topo::RankLocation loc = cl.locate(r);
    auto& [mask, counts] = per_node[loc.node];
    mask |= topo::ChipMask{1} << loc.chip;
    ++counts[loc.chip];
  }
  std::vector<std::string> parts;
  for (const auto& [node, v] : per_node) {
    std::string p = std::to_string(v.first) + ":";
    for (const auto& [chip, n] : v.second) p += std::to_string(n) + ",";
    if (cl.spec().ultraserver_nodes > 1) p = std::to_string(node) + "@" + p;
    parts.push_back(p);
  }
  std::sort(parts.begin(), parts.end());
  std::string key;
  for (const auto& p : parts) key += p + ";";
  return key;
}

// The group of |groups| with the slowest probe all-gather, or the first unroutable one.
bool worst_route(const topo::Cluster& cl, const topo::LinkGraph& g,
                 const std::vector<std::vector<int>>& groups, std::optional<coll::Route>& out,
                 std::string& error) {
  double worst = -1;
  std::map<std::string, bool> seen;
  for (const auto& grp : groups) {
    if (!seen.emplace(signature(cl, grp), true).second) continue;
    coll::Route rt = coll::route_group(cl, g, grp);
    if (!rt.routable) {
      error = rt.error;
      out = rt;
      return false;
    }
    const double t = coll::estimate(cl, rt, coll::Collective::kAllGather, hw::MiB(64)).seconds;
    if (t > worst) {
      worst = t;
      out = rt;
    }
  }
  return true;
}

bool route_mesh(const topo::Cluster& cl, const topo::LinkGraph& g, const topo::Mesh& mesh,
                std::optional<coll::Route>* pp, std::optional<coll::Route>* rep,
                std::optional<coll::Route>* shard, std::optional<coll::Route>* tp,
                std::string& error) {
  for (int a = 0; a < mesh.dims(); ++a) {
    const auto groups = mesh.groups(a);
    const std::string& name = mesh.names()[a];
    if (name == "pp") {
      // Stages exchange activations point to point; the runtime needs no collective algorithm.
      const std::vector<int> pair = {groups[0][0], groups[0][1]};
      *pp = coll::route_group(cl, g, pair);
      continue;
    }
    std::optional<coll::Route>* slot = name == "replicate" ? rep : name == "tp" ? tp : shard;
    if (!worst_route(cl, g, groups, *slot, error)) {
      error = "axis '" + name + "': " + error;
      return false;
    }
  }
  return true;
}

}  // namespace

void Planner::route(const Layout& l, bool search, Routing& r) const {
  const topo::LinkGraph graph(cluster_);
  const auto shape = l.mesh_shape();
  const auto names = l.mesh_axes();
  topo::Mesh mesh(cluster_, shape, names);
  std::string error;
  if (route_mesh(cluster_, graph, mesh, &r.pp, &r.replicate, &r.shard, &r.tp, error)) {
    r.routable = true;
    return;
  }
  r.routable = false;
  r.error = error;
  if (!search) return;
  coll::SearchOptions so;
  so.max_steps = 100;
  so.max_solutions = 4;
  const coll::SearchResult found = coll::search_placement(cluster_, graph, shape, names, so);
  if (!found.found) return;
  topo::Mesh custom(cluster_, shape, names, found.placement);
  Routing c;
  std::string err2;
  if (route_mesh(cluster_, graph, custom, &c.pp, &c.replicate, &c.shard, &c.tp, err2)) {
    c.routable = true;
    c.custom = !found.is_default;
    c.placement = found.placement;
    r = c;
  }
}

Evaluation Planner::evaluate_routed(const Layout& l, const Routing& r) const {
  Evaluation e;
  e.layout = l;
  e.routable = r.routable;
  e.custom_placement = r.custom;
  e.placement = r.placement;
  e.route_error = r.error;
  const int dp = l.dp();
  if (workload_.global_batch % dp != 0) {
    e.batch_ok = false;
    e.batch_error = "global batch " + std::to_string(workload_.global_batch) +
                    " is not divisible by the data-parallel degree " + std::to_string(dp) +
                    " (replicate " + std::to_string(l.replicate) + " x shard " +
                    std::to_string(l.shard) + ")";
  } else if ((workload_.global_batch / dp) % l.micro_batch != 0) {
    e.batch_ok = false;
    e.batch_error = "the local batch " + std::to_string(workload_.global_batch / dp) +
                    " is not divisible by the micro-batch " + std::to_string(l.micro_batch);
  }
  if (model_.heads % l.tp != 0) {
    e.tp_ok = false;
    e.tp_error = "TP" + std::to_string(l.tp) + " does not divide the " +
                 std::to_string(model_.heads) + " attention heads of " + model_.name +
                 "; use a TP degree that divides them";
  }
  e.memory = memory(l);
  e.fits = e.memory.total <= e.memory.budget;

  // Model FLOPs per step (for MFU): 3 x forward (backward = 2 x forward), no recompute.
  const ModelSpec& m = model_;
  const double s = workload_.seq;
  const double matmul_per_token =
      static_cast<double>(m.active_params()) - m.embedding_params() +
      (m.tied_embeddings ? static_cast<double>(m.vocab) * m.hidden : 0) -
      m.layers * static_cast<double>(m.block_norm_params()) - m.final_norm_params();
  const double attn_per_token = m.layers * 2.0 * 2.0 * (s / 2) * m.attention_dim();
  e.model_flops_per_step =
      3.0 * (2.0 * matmul_per_token + attn_per_token) * s * workload_.global_batch;

  if (!e.batch_ok) {
    classify(e);
    return e;
  }
  const int b = l.micro_batch, tp = l.tp;
  const bool sp = workload_.sequence_parallel && tp > 1;
  const int micro = workload_.global_batch / dp / b;
  const int Ls = (m.layers + l.pp - 1) / l.pp;
  const BlockTimes bt = block_times(m, cluster_, workload_.seq, b, tp, sp);
  TimeBreakdown& t = e.time;
  const double recompute_block = l.checkpointing == Checkpointing::kFull        ? bt.fwd_block
                                 : l.checkpointing == Checkpointing::kSelective ? bt.attn_core
                                                                                : 0;
  const double Cf = Ls * bt.fwd_block + bt.logits_fwd;
  const double Cb = 2 * Cf;
  const double Cr = Ls * recompute_block;
  const double T = s * b;
  auto est = [&](const std::optional<coll::Route>& rt, coll::Collective c, double bytes) {
    if (!rt || !rt->routable || rt->ranks < 2 || bytes <= 0) return 0.0;
    return coll::estimate(cluster_, *rt, c, static_cast<hw::Bytes>(bytes)).seconds;
  };
  // TP: per block, forward two all-reduces of the s b h activations (with SP: two all-gathers
  // and two reduce-scatters), the same in backward, and again in a full recompute.
  double tp_mb = 0;
  if (tp > 1) {
    const double act = T * m.hidden * 2;
    const double fwd = sp ? 2 * (est(r.tp, coll::Collective::kAllGather, act) +
                                 est(r.tp, coll::Collective::kReduceScatter, act))
                          : 2 * est(r.tp, coll::Collective::kAllReduce, act);
    tp_mb = Ls * fwd * (2 + (l.checkpointing == Checkpointing::kFull ? 1 : 0));
  }
  // FSDP: per micro-batch, each block's all-gather in forward and again in backward, and its
  // gradient reduce-scatter; prefetch overlaps them with the neighbouring block's compute.
  const Bytes by = bytes_of(workload_.precision);
  double fsdp_exposed_mb = 0, fsdp_total_mb = 0;
  const StageParams sp_last = stage_params(m, stages_of(m, l.pp).back(), tp, l.pp);
  if (l.shard > 1) {
    const double ag = est(r.shard, coll::Collective::kAllGather, sp_last.unit * 2);
    const double rs = est(r.shard, coll::Collective::kReduceScatter, sp_last.unit * by.reduce);
    const double ag_root = est(r.shard, coll::Collective::kAllGather, sp_last.root * 2);
    const double rs_root = est(r.shard, coll::Collective::kReduceScatter, sp_last.root * by.reduce);
    const double cover_f = bt.fwd_block, cover_b = 2 * bt.fwd_block + recompute_block;
    fsdp_exposed_mb = ag + (Ls - 1) * std::max(0.0, ag - cover_f) + ag + rs +
                      (Ls - 1) * std::max(0.0, ag + rs - cover_b) + ag_root + rs_root;
    fsdp_total_mb = Ls * (2 * ag + rs) + ag_root + rs_root;
    t.fsdp_internode = r.shard && r.shard->nodes > 1;
  }
  double pp_mb = 0;
  if (l.pp > 1)
    pp_mb = 2 * est(r.pp, coll::Collective::kSendRecv, T * m.hidden * 2 / (sp ? tp : 1));
  const double t_mb = Cf + Cb + Cr + tp_mb + fsdp_exposed_mb + pp_mb;
  t.compute_s = micro * (Cf + Cb);
  t.recompute_s = micro * Cr;
  t.tp_s = micro * tp_mb;
  t.fsdp_exposed_s = micro * fsdp_exposed_mb;
  t.fsdp_total_s = micro * fsdp_total_mb;
  t.pp_p2p_s = micro * pp_mb;
  t.bubble_s = (l.pp - 1) * t_mb;
  // Replicas: one gradient all-reduce per step (after accumulation), overlapped with the last
  // micro-batch's backward except for the last block's share.
  if (l.replicate > 1) {
    const double grad = (sp_last.blocks + sp_last.root) / l.shard * by.reduce;
    t.dp_total_s = est(r.replicate, coll::Collective::kAllReduce, grad);
    t.dp_exposed_s = std::max(t.dp_total_s / Ls, t.dp_total_s - Cb);
  }
  // AdamW: read parameter, gradient, m, v; write parameter, m, v (HBM-bound).
  const double elems = (sp_last.blocks + sp_last.root) / l.shard;
  const double hbm_rank = cluster_.spec().chip->hbm_Bps / cluster_.ranks_per_chip();
  t.optimizer_s = elems * (2 * by.param + by.grad + by.opt + by.opt) / hbm_rank;
  t.step_s = micro * t_mb + t.bubble_s + t.dp_exposed_s + t.optimizer_s;
  e.tokens_per_second = workload_.global_batch * s / t.step_s;
  e.mfu = e.model_flops_per_step / (t.step_s * cluster_.world() * peak_flops_per_rank());
  classify(e);
  return e;
}

void Planner::classify(Evaluation& e) const {
  const MemoryBreakdown& mem = e.memory;
  const double persistent = mem.parameters + mem.gradients + mem.optimizer;
  if (!e.batch_ok) {
    e.limiting_resource = "batch";
    e.advice = e.batch_error + "; choose a global batch divisible by the data-parallel degree";
    return;
  }
  if (!e.tp_ok) {
    e.limiting_resource = "tensor parallel degree";
    e.advice = e.tp_error;
    return;
  }
  if (!e.routable) {
    e.limiting_resource = "collective topology";
    e.advice = "no collective algorithm for a group (" +
               e.route_error.substr(0, e.route_error.find('\n')) +
               "); use a placement from `vtrn mesh --placement auto` or reduce TP to four";
    return;
  }
  if (!e.fits) {
    if (persistent >= 0.5 * (mem.total - mem.runtime)) {
      e.limiting_resource = "persistent model state";
      e.advice = "increase FSDP sharding (more shard ranks or more nodes)";
    } else {
      e.limiting_resource = "gathered weights or activations";
      e.advice = "use TP4, checkpointing, or a smaller local batch with accumulation";
    }
    return;
  }
  const TimeBreakdown& t = e.time;
  const double internode = t.fsdp_internode ? t.fsdp_exposed_s : 0;
  const double comm = t.tp_s + t.fsdp_exposed_s + t.dp_exposed_s + t.pp_p2p_s - internode;
  struct Part {
    double s;
    const char* name;
    const char* advice;
  };
  const Part parts[] = {
      {internode, "inter-node parameter traffic",
       "keep FSDP local and scale through replicas (HSDP) when the replica fits"},
      {comm, "compute idle during communication",
       "use supported prefetching and HostCC stream overlap, or a layout with less TP"},
      {t.bubble_s, "pipeline bubble", "use more micro-batches per step or fewer pipeline stages"},
      {t.recompute_s, "gathered weights or activations",
       "activation recomputation pays for memory: use TP4, or a smaller local batch with "
       "accumulation"},
  };
  const Part* worst = &parts[0];
  for (const Part& p : parts)
    if (p.s > worst->s) worst = &p;
  if (worst->s < 0.05 * t.step_s) {
    e.limiting_resource = "compute";
    e.advice =
        "the Tensor engine is busy; tune kernels for the sharded shapes (NKI Library) before "
        "changing the layout";
  } else {
    e.limiting_resource = worst->name;
    e.advice = worst->advice;
  }
}

}  // namespace vtrn::plan

namespace vtrn::plan {

SearchResult Planner::search(const SearchOptions& o) const {
  SearchResult res;
  const int world = cluster_.world();
  std::vector<Evaluation> rejected;
  struct Pending {
    Layout base;
    double optimistic;
    std::vector<Evaluation> evals;
  };
  std::vector<Pending> pending;
  for (int tp : o.tp_degrees) {
    if (tp > world || world % tp != 0) continue;
    const int rest = world / tp;
    for (int pp = 1; pp <= rest; ++pp) {
      if (rest % pp != 0) continue;
      if (pp > 1 && (!o.allow_pp || pp > model_.layers)) continue;
      const int dp = rest / pp;
      for (int rep = 1; rep <= dp; ++rep) {
        if (dp % rep != 0) continue;
        Layout base;
        base.pp = pp;
        base.replicate = rep;
        base.shard = dp / rep;
        base.tp = tp;
        ++res.factorizations;
        Routing r;
        route(base, false, r);
        double best_optimistic = 0;
        std::vector<Evaluation> evals;
        for (Checkpointing c : o.checkpointing) {
          for (int mb : o.micro_batches) {
            Layout l = base;
            l.checkpointing = c;
            l.micro_batch = mb;
            if (workload_.global_batch % l.dp() == 0 && (workload_.global_batch / l.dp()) % mb != 0)
              continue;
            ++res.evaluated;
            // Unroutable: the axes without a route cost nothing here, an optimistic bound.
            Evaluation e = evaluate_routed(l, r);
            if (!r.routable && e.batch_ok && e.fits)
              best_optimistic = std::max(best_optimistic, e.tokens_per_second);
            evals.push_back(std::move(e));
          }
        }
        if (r.routable || best_optimistic == 0 || !o.search_placement) {
          for (auto& e : evals) (e.valid() ? res.ranked : rejected).push_back(std::move(e));
        } else {
          pending.push_back({base, best_optimistic, std::move(evals)});
        }
      }
    }
  }
  // The placement search is the expensive part: run it only for unroutable layouts whose
  // optimistic throughput (their unroutable axes costing nothing) could enter the top
  // |keep_top|, best first.
  std::sort(pending.begin(), pending.end(),
            [](const Pending& a, const Pending& b) { return a.optimistic > b.optimistic; });
  auto threshold = [&]() {
    if (static_cast<int>(res.ranked.size()) < o.keep_top) return 0.0;
    std::vector<double> tps;
    for (const auto& e : res.ranked) tps.push_back(e.tokens_per_second);
    std::nth_element(tps.begin(), tps.begin() + (o.keep_top - 1), tps.end(),
                     std::greater<double>());
    return tps[o.keep_top - 1];
  };
  for (auto& p : pending) {
    if (p.optimistic <= threshold() || res.placement_searches >= o.max_placement_searches) {
      ++res.placement_searches_skipped;
      for (auto& e : p.evals) rejected.push_back(std::move(e));
      continue;
    }
    ++res.placement_searches;
    Routing r;
    route(p.base, true, r);
    if (!r.routable) {
      for (auto& e : p.evals) rejected.push_back(std::move(e));
      continue;
    }
    for (const auto& old : p.evals) {
      Evaluation e = evaluate_routed(old.layout, r);
      (e.valid() ? res.ranked : rejected).push_back(std::move(e));
    }
  }
  auto better = [](const Evaluation& a, const Evaluation& b) {
    if (a.tokens_per_second != b.tokens_per_second)
      return a.tokens_per_second > b.tokens_per_second;
    return a.memory.total < b.memory.total;
  };
  std::stable_sort(res.ranked.begin(), res.ranked.end(), better);
  // Rejected, most promising first: routable and batch-valid ones by bytes over budget.
  std::stable_sort(rejected.begin(), rejected.end(), [](const Evaluation& a, const Evaluation& b) {
    const int ka = !a.batch_ok   ? 2
                   : !a.routable ? 1
                                 : 0,
              kb = !b.batch_ok   ? 2
                   : !b.routable ? 1
                                 : 0;
    if (ka != kb) return ka < kb;
    return a.memory.total - a.memory.budget < b.memory.total - b.memory.budget;
  });
  if (!res.ranked.empty())
    res.alternatives = alternatives(res.ranked.front(), res.ranked, rejected);
  if (rejected.size() > 20) rejected.resize(20);
  res.rejected = std::move(rejected);
  if (res.ranked.empty()) {
    std::string why;
    if (res.rejected.empty()) {
      why = "no layout of " + cluster_.describe() + " could be formed";
    } else if (!res.rejected.front().batch_ok) {
      why = "every layout is rejected for the batch: " + res.rejected.front().batch_error +
            "; choose a global batch divisible by the data-parallel degrees";
    } else {
      const Evaluation& e = res.rejected.front();
      const MemoryBreakdown& mm = e.memory;
      why = "no layout fits in the " + gib(mm.budget) + " of one rank. The closest, " +
            e.layout.describe() + " (micro-batch " + std::to_string(e.layout.micro_batch) + ", " +
            std::string(checkpointing_name(e.layout.checkpointing)) + " checkpointing), needs " +
            gib(mm.total) + ": persistent " + gib(mm.parameters + mm.gradients + mm.optimizer) +
            ", gathered " + gib(mm.gathered) + ", activations " + gib(mm.activations) +
            ", logits " + gib(mm.logits) + ". Limiting resource: " + e.limiting_resource + " (" +
            e.advice + ").";
      // What would fit: more nodes.
      for (int f : {2, 4, 8, 16}) {
        const int nodes = cluster_.nodes() * f;
        try {
          topo::Cluster bigger(cluster_.spec().name, cluster_.lnc(), nodes);
          Planner p(model_, bigger, workload_);
          SearchOptions quick = o;
          quick.search_placement = false;
          quick.tp_degrees = {1, 4, 8};
          const SearchResult sr = p.search(quick);
          if (!sr.ranked.empty()) {
            why += " With " + std::to_string(nodes) +
                   " nodes it fits: " + sr.ranked.front().layout.describe() + " (micro-batch " +
                   std::to_string(sr.ranked.front().layout.micro_batch) + ", " +
                   std::string(checkpointing_name(sr.ranked.front().layout.checkpointing)) +
                   " checkpointing).";
            break;
          }
        } catch (const std::exception&) {
          break;
        }
      }
    }
    res.why_nothing = why;
  }
  return res;
}

std::string Planner::mesh_code(const Evaluation& e) const {
  const Layout& l = e.layout;
  const auto shape = l.mesh_shape();
  const auto names = l.mesh_axes();
  auto tuple_i = [](const std::vector<int>& v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + (v.size() == 1 ? ",)" : ")");
  };
  auto tuple_s = [](const std::vector<std::string>& v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + ("\"" + v[i] + "\"");
    return s + (v.size() == 1 ? ",)" : ")");
  };
  std::string c;
  c += "# " + model_.name + " on " + cluster_.describe() + ": " + l.describe() + ", micro-batch " +
       std::to_string(l.micro_batch) + ", " + std::string(checkpointing_name(l.checkpointing)) +
       " activation checkpointing\n";
  if (!e.custom_placement) {
    c += "from torch.distributed.device_mesh import init_device_mesh\n\n";
    c += "mesh = init_device_mesh(\"neuron\", " + tuple_i(shape) +
         ", mesh_dim_names=" + tuple_s(names) + ")\n";
  } else {
    c += "# The default rank order is not routable; this placement is (vtrn mesh --placement "
         "auto).\n";
    c += "import torch\nimport torch.distributed as dist\nfrom torch.distributed.device_mesh "
         "import DeviceMesh\n\n";
    c += "ranks = torch.tensor([";
    for (size_t i = 0; i < e.placement.size(); ++i)
      c += (i ? ", " : "") + std::to_string(e.placement[i]);
    c += "]).reshape" + tuple_i(shape) + "\n";
    c += "names = " + tuple_s(names) + "\n";
    c += "groups = []\n";
    c += "for dim in range(ranks.dim()):\n";
    c += "    mine = None\n";
    c += "    for members in ranks.movedim(dim, -1).reshape(-1, ranks.shape[dim]).tolist():\n";
    c += "        group = dist.new_group(ranks=members, sort_ranks=False)\n";
    c += "        if dist.get_rank() in members:\n";
    c += "            mine = group\n";
    c += "    groups.append(mine)\n";
    c += "mesh = DeviceMesh.from_group(groups, device_type=\"neuron\", mesh=ranks, "
         "mesh_dim_names=names)\n";
  }
  std::string dp_mesh;
  if (l.replicate > 1 && l.shard > 1)
    dp_mesh = "mesh[(\"replicate\", \"shard\")]  # HSDP";
  else if (l.shard > 1)
    dp_mesh = "mesh[\"shard\"]";
  else if (l.replicate > 1)
    dp_mesh = "mesh[\"replicate\"]  # DDP-style replication";
  if (l.tp > 1)
    c += "# tensor (and sequence) parallelism on mesh[\"tp\"]: parallelize_module(block, "
         "mesh[\"tp\"], plan)\n";
  if (!dp_mesh.empty())
    c += "# FSDP2 per transformer block: fully_shard(block, mesh=" + dp_mesh + ")\n";
  if (l.pp > 1)
    c += "# pipeline stages on mesh[\"pp\"] (torch.distributed.pipelining, schedule " +
         std::string(schedule_name(workload_.schedule)) + ")\n";
  return c;
}

std::string Planner::explain(const Evaluation& e) const {
  const Layout& l = e.layout;
  const MemoryBreakdown& m = e.memory;
  std::string s;
  auto what = [&]() {
    std::string w;
    if (l.pp > 1) w += "PP" + std::to_string(l.pp) + " x ";
    if (l.tp > 1) w += "TP" + std::to_string(l.tp) + " x ";
    if (l.replicate > 1 && l.shard > 1)
      w += "HSDP (" + std::to_string(l.replicate) + " replicas of FSDP" + std::to_string(l.shard) +
           ")";
    else if (l.shard > 1)
      w += "FSDP" + std::to_string(l.shard);
    else if (l.replicate > 1)
      w += "DDP" + std::to_string(l.replicate);
    else
      w += "one rank";
    return w;
  };
  s += what() + ", micro-batch " + std::to_string(l.micro_batch) + ", " +
       std::string(checkpointing_name(l.checkpointing)) + " checkpointing";
  if (e.custom_placement) s += ", custom placement";
  s += ": ";
  if (!e.batch_ok) return s + e.batch_error + ".";
  if (!e.tp_ok) return s + e.tp_error + ".";
  if (!e.routable) return s + "not routable. " + e.advice + ".";
  s += gib(m.total) + " of " + gib(m.budget) + " per rank (persistent state " +
       gib(m.parameters + m.gradients + m.optimizer) + ", gathered " + gib(m.gathered) +
       ", activations " + gib(m.activations) + ")";
  if (!e.fits)
    return s + " does not fit. Limiting resource: " + e.limiting_resource + ": " + e.advice + ".";
  s += "; step " + fmt("%.3g s", e.time.step_s) + ", " + fmt("%.0f", e.tokens_per_second) +
       " tokens/s, MFU " + fmt("%.1f%%", 100 * e.mfu) + ". ";
  // Why this much model parallelism, in the seed's terms.
  if (l.tp == 1 && l.pp == 1)
    s += "The gathered block and activations fit per rank, so no TP is needed (the seed's "
         "FSDP-only start). ";
  else if (l.tp > 1)
    s += "TP" + std::to_string(l.tp) +
         " splits the gathered block and activations that do not fit (or run slower) unsplit" +
         std::string(l.tp <= cluster_.ranks_per_chip() ? ", and stays on one chip. " : ". ");
  if (l.replicate > 1 && l.shard > 1)
    s += "A replica fits within " +
         std::string(l.shard * l.tp * l.pp <= cluster_.ranks_per_node() ? "one node"
                                                                        : "its shard group") +
         ", so replicas add throughput without inter-node parameter gathers (HSDP). ";
  else if (l.shard * l.tp > cluster_.ranks_per_node())
    s += "FSDP spans nodes because persistent model state needs the sharding. ";
  s += "Limiting resource: " + e.limiting_resource + ": " + e.advice + ".";
  return s;
}

}  // namespace vtrn::plan

namespace vtrn::plan {

std::vector<std::string> Planner::alternatives(const Evaluation& best,
                                               const std::vector<Evaluation>& ranked,
                                               const std::vector<Evaluation>& rejected) const {
  std::vector<std::string> out;
  auto name = [](const Layout& l) {
    std::string w;
    if (l.pp > 1) w += "PP" + std::to_string(l.pp) + " x ";
    if (l.tp > 1) w += "TP" + std::to_string(l.tp) + " x ";
    if (l.replicate > 1 && l.shard > 1)
      w += "HSDP " + std::to_string(l.replicate) + "x" + std::to_string(l.shard);
    else if (l.shard > 1)
      w += "FSDP" + std::to_string(l.shard);
    else if (l.replicate > 1)
      w += "DDP" + std::to_string(l.replicate);
    else
      w += "one rank";
    return w + " (micro-batch " + std::to_string(l.micro_batch) + ", " +
           std::string(checkpointing_name(l.checkpointing)) + ")";
  };
  // The best valid layout matching |pred|, else the closest rejected one, in one sentence.
  auto describe = [&](const char* what, auto pred) {
    for (const Evaluation& e : ranked) {
      if (!pred(e.layout)) continue;
      if (&e == &ranked.front() || e.layout.describe() == best.layout.describe()) return;
      const double slower = 100.0 * (best.tokens_per_second / e.tokens_per_second - 1);
      out.push_back(std::string(what) + ": the best, " + name(e.layout) + ", is " +
                    fmt("%.1f%%", slower) + " slower (limiting resource: " + e.limiting_resource +
                    ").");
      return;
    }
    for (const Evaluation& e : rejected) {
      if (!pred(e.layout) || !e.batch_ok) continue;
      if (!e.routable) {
        out.push_back(std::string(what) +
                      ": not routable under any placement tried (collective topology).");
        return;
      }
      out.push_back(std::string(what) + ": nothing fits; the closest, " + name(e.layout) +
                    ", needs " + gib(e.memory.total) + " of " + gib(e.memory.budget) +
                    " (limiting resource: " + e.limiting_resource + ": " + e.advice + ").");
      return;
    }
  };
  const Layout& b = best.layout;
  if (b.tp > 1)
    describe("Without TP", [](const Layout& l) { return l.tp == 1; });
  else
    describe("With TP4", [](const Layout& l) { return l.tp == 4; });
  if (b.replicate > 1 && b.shard > 1)
    describe("FSDP over the same ranks without replicas",
             [&](const Layout& l) { return l.replicate == 1 && l.tp == b.tp && l.pp == b.pp; });
  else if (cluster_.nodes() > 1 && b.replicate == 1)
    describe("HSDP (replicas of a smaller sharding group)", [&](const Layout& l) {
      return l.replicate > 1 && l.shard > 1 && l.tp == b.tp && l.pp == b.pp;
    });
  if (b.pp == 1 && cluster_.nodes() > 1)
    describe("With pipeline stages", [](const Layout& l) { return l.pp > 1; });
  if (b.checkpointing != Checkpointing::kNone) {
    const Layout same = b;
    describe("Without activation checkpointing", [same](const Layout& l) {
      return l.pp == same.pp && l.replicate == same.replicate && l.shard == same.shard &&
             l.tp == same.tp && l.checkpointing == Checkpointing::kNone;
    });
  }
  return out;
}

}  // namespace vtrn::plan
