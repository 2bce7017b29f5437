#include "vtrn/plan/planner.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "vtrn/coll/collective_time.h"
#include "vtrn/coll/placement_search.h"
#include "vtrn/coll/route.h"
#include "vtrn/topo/link_graph.h"
#include "vtrn/topo/mesh.h"

namespace vtrn::plan {

Planner::Planner(ModelSpec model, const topo::Cluster& cluster, Workload workload)
    : model_(std::move(model)), cluster_(cluster), workload_(workload) {
  model_.validate();
  const std::string most = std::to_string(kMaxWorkloadValue) + " (2^24)";
  if (workload_.seq < 1 || workload_.seq > kMaxWorkloadValue)
    throw std::invalid_argument("sequence length " + std::to_string(workload_.seq) +
                                " must be between 1 and " + most);
  if (workload_.global_batch < 1 || workload_.global_batch > kMaxWorkloadValue)
    throw std::invalid_argument("global batch " + std::to_string(workload_.global_batch) +
                                " must be between 1 and " + most + " sequences");
  if (workload_.prefetch < 0 || workload_.prefetch > kMaxWorkloadValue)
    throw std::invalid_argument("prefetch " + std::to_string(workload_.prefetch) +
                                " must be between 0 and " + most + " FSDP units");
}

void Planner::set_step_model(const hw::StepModel& params) {
  hw::validate(params);
  params_ = params;
}

double Planner::budget_bytes() const { return hbm_budget_bytes(cluster_); }

double Planner::peak_flops_per_rank() const { return plan::peak_flops_per_rank(cluster_); }

MemoryBreakdown Planner::memory(const Layout& l) const {
  return memory_per_rank(model_, cluster_, workload_, l);
}

Evaluation Planner::evaluate(const Layout& layout, bool search_placement) const {
  if (layout.world() != cluster_.world())
    throw std::invalid_argument("layout " + layout.describe() + " has " +
                                std::to_string(layout.world()) + " ranks but " +
                                cluster_.describe() + " has " + std::to_string(cluster_.world()) +
                                "; the degrees must multiply to the world size");
  Layout l = layout;
  if (l.micro_batch > kMaxWorkloadValue)
    throw std::invalid_argument("micro-batch " + std::to_string(l.micro_batch) +
                                " must be at most " + std::to_string(kMaxWorkloadValue) +
                                " (2^24)");
  if (l.micro_batch < 1) l.micro_batch = 1;
  Routing r;
  route(l, search_placement, r);
  return evaluate_routed(l, r);
}

std::vector<Evaluation> Planner::evaluate_each(const Layout& layout,
                                               const std::vector<hw::StepModel>& params) const {
  const Evaluation first = evaluate(layout);  // validates the layout
  Routing r;
  route(first.layout, true, r);
  std::vector<Evaluation> out;
  out.reserve(params.size());
  Planner copy = *this;
  for (const hw::StepModel& sm : params) {
    copy.set_step_model(sm);
    out.push_back(copy.evaluate_routed(first.layout, r));
  }
  return out;
}

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
  // A group that is another's translate by whole nodes (every rank moved by the same multiple
  // of the ranks per node) has the same chips in the same roles, so the same signature: found
  // without building it. Not in an UltraServer, whose signature names the nodes.
  const int per_node = cl.ranks_per_node();
  const bool by_node = cl.spec().ultraserver_nodes <= 1 && per_node > 0;
  std::map<int, std::vector<const std::vector<int>*>> seen_at;  // by first rank within its node
  for (const auto& grp : groups) {
    if (by_node && !grp.empty()) {
      auto& reps = seen_at[grp[0] % per_node];
      bool translate = false;
      for (const std::vector<int>* rep : reps) {
        const int delta = grp[0] - (*rep)[0];
        if (rep->size() != grp.size() || delta % per_node != 0) continue;
        translate = true;
        for (size_t j = 0; j < grp.size() && translate; ++j)
          translate = grp[j] - (*rep)[j] == delta;
        if (translate) break;
      }
      if (translate) continue;
      reps.push_back(&grp);
    }
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
  if (route_mesh(cluster_, graph, mesh, &r.routes.pp, &r.routes.replicate, &r.routes.shard,
                 &r.routes.tp, error)) {
    r.routable = true;
    return;
  }
  r.routable = false;
  r.error = error;
  if (!search) return;
  coll::PlacementSearchOptions so;
  so.max_steps = 100;
  so.max_solutions = 4;
  const coll::PlacementSearchResult found =
      coll::search_placement(cluster_, graph, shape, names, so);
  if (!found.found) return;
  topo::Mesh custom(cluster_, shape, names, found.placement);
  Routing c;
  std::string err2;
  if (route_mesh(cluster_, graph, custom, &c.routes.pp, &c.routes.replicate, &c.routes.shard,
                 &c.routes.tp, err2)) {
    c.routable = true;
    c.custom = !found.is_default;
    c.placement = found.placement;
    r = c;
  }
}

Evaluation Planner::evaluate_unfit(const Layout& l, const MemoryBreakdown& mem) const {
  return evaluate_routed(l, Routing{}, &mem);
}

Evaluation Planner::evaluate_routed(const Layout& l, const Routing& r,
                                    const MemoryBreakdown* known) const {
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
  e.memory = known ? *known : memory(l);
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

  if (!e.batch_ok || (known && !e.fits)) {
    classify(e);
    return e;
  }
  e.time = step_time(model_, cluster_, workload_, l, r.routes, params_);
  e.tokens_per_second = workload_.global_batch * s / e.time.step_s;
  e.mfu = e.model_flops_per_step / (e.time.step_s * cluster_.world() * peak_flops_per_rank());
  classify(e);
  return e;
}

}  // namespace vtrn::plan
