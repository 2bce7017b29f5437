// The planner's explanations: the limiting resource of a layout and its remedy, in the terms of
// "Best practices for training on AWS Neuron"; the DeviceMesh code of a layout; the nearest
// alternatives to the best one; why nothing fits.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "vtrn/plan/planner.h"

namespace vtrn::plan {
namespace {

constexpr double kGiB = 1073741824.0;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string gib(double bytes) { return fmt("%.1f GiB", bytes / kGiB); }

}  // namespace

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
      w += (l.zero1 ? "ZeRO-1 DP" : "DDP") + std::to_string(l.replicate);
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
       ", activations " + gib(m.activations) + ", at the " + m.peak_moment + ")";
  if (!e.fits)
    return s + " does not fit. Limiting resource: " + e.limiting_resource + ": " + e.advice + ".";
  s += "; step " + fmt("%.3g s", e.time.step_s) + ", " + fmt("%.0f", e.tokens_per_second) +
       " tokens/s, MFU " + fmt("%.1f%%", 100 * e.mfu) + ". ";
  // Why this much model parallelism, in the guide's terms.
  if (l.tp == 1 && l.pp == 1)
    s += "The gathered block and activations fit per rank, so no TP is needed (the "
         "FSDP-only starting layout of the best-practices guide). ";
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
      w += (l.zero1 ? "ZeRO-1 DP" : "DDP") + std::to_string(l.replicate);
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

std::string Planner::why_nothing_fits(const std::vector<Evaluation>& rejected,
                                      const LayoutSearchOptions& options) const {
  std::string why;
  if (rejected.empty()) {
    why = "no layout of " + cluster_.describe() + " could be formed";
  } else if (!rejected.front().batch_ok) {
    why = "every layout is rejected for the batch: " + rejected.front().batch_error +
          "; choose a global batch divisible by the data-parallel degrees";
  } else {
    const Evaluation& e = rejected.front();
    const MemoryBreakdown& mm = e.memory;
    why = "no layout fits in the " + gib(mm.budget) + " of one rank. The closest, " +
          e.layout.describe() + " (micro-batch " + std::to_string(e.layout.micro_batch) + ", " +
          std::string(checkpointing_name(e.layout.checkpointing)) + " checkpointing), needs " +
          gib(mm.total) + ": persistent " + gib(mm.parameters + mm.gradients + mm.optimizer) +
          ", gathered " + gib(mm.gathered) + ", activations " + gib(mm.activations) + ", logits " +
          gib(mm.logits) + ", at the " + mm.peak_moment +
          ". Limiting resource: " + e.limiting_resource + " (" + e.advice + ").";
    // What would fit: more nodes.
    for (int f : {2, 4, 8, 16}) {
      const int nodes = cluster_.nodes() * f;
      try {
        topo::Cluster bigger(cluster_.spec().name, cluster_.lnc(), nodes);
        Planner p(model_, bigger, workload_);
        LayoutSearchOptions quick = options;
        quick.search_placement = false;
        quick.tp_degrees = {1, 4, 8};
        const LayoutSearchResult sr = p.search(quick);
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
  return why;
}

}  // namespace vtrn::plan
