// The layout search: every factorization of the world into pp x replicate x shard x tp, each
// with every checkpointing policy and micro-batch, ranked by modeled throughput. The placement
// search runs only for unroutable layouts that could enter the top of the ranking.
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "vtrn/plan/planner.h"

namespace vtrn::plan {

LayoutSearchResult Planner::search(const LayoutSearchOptions& o) const {
  LayoutSearchResult res;
  const int world = cluster_.world();
  std::vector<Evaluation> rejected;
  struct Pending {
    Layout base;
    double optimistic;
    std::vector<Evaluation> evals;
  };
  std::vector<Pending> pending;
  struct Group {
    Layout base;
    double optimistic;
    std::vector<Layout> layouts;
  };
  std::vector<Group> groups;
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
        // Memory first: it needs no routing. A factorization none of whose choices fits is
        // rejected without routing it, and within one micro-batch a checkpointing policy that
        // recomputes more than one that already fits is dominated (same memory budget met,
        // same collectives, more compute) and never evaluated.
        std::vector<Layout> todo;
        std::vector<Evaluation> unfit;
        for (int mb : o.micro_batches) {
          bool fitted = false;
          for (Checkpointing c :
               {Checkpointing::kNone, Checkpointing::kSelective, Checkpointing::kFull}) {
            if (std::find(o.checkpointing.begin(), o.checkpointing.end(), c) ==
                o.checkpointing.end())
              continue;
            Layout l = base;
            l.checkpointing = c;
            l.micro_batch = mb;
            if (workload_.global_batch % l.dp() == 0 && (workload_.global_batch / l.dp()) % mb != 0)
              continue;
            ++res.evaluated;
            if (fitted) {
              ++res.pruned;
              continue;
            }
            const MemoryBreakdown mem = memory(l);
            if (mem.total <= mem.budget) {
              fitted = true;
              todo.push_back(l);
            } else {
              unfit.push_back(evaluate_unfit(l, mem));
            }
          }
        }
        for (auto& e : unfit) rejected.push_back(std::move(e));
        if (todo.empty()) continue;
        // Optimistic bound: every collective free (no routes), so no layout of the group can be
        // faster than this.
        Group g{base, 0, std::move(todo)};
        for (const Layout& l : g.layouts) {
          const Evaluation e = evaluate_routed(l, Routing{});
          if (e.batch_ok && e.fits) g.optimistic = std::max(g.optimistic, e.tokens_per_second);
        }
        groups.push_back(std::move(g));
      }
    }
  }
  // Branch and bound: route the groups best bound first, and skip a group once its bound can
  // neither enter the top |keep_top| nor beat the best routed layout of any class the
  // alternatives compare against (same TP, same TP and PP with or without replicas, PP or not).
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group& a, const Group& b) { return a.optimistic > b.optimistic; });
  std::vector<double> top_tps;  // best keep_top real throughputs, descending
  std::map<std::string, double> class_best;
  auto classes = [](const Layout& l) {
    const std::string tp = std::to_string(l.tp), pp = std::to_string(l.pp);
    return std::vector<std::string>{"tp" + tp, "pp" + std::string(l.pp > 1 ? ">1" : "1"),
                                    (l.replicate > 1 && l.shard > 1 ? "hsdp/"
                                     : l.replicate == 1             ? "fsdp/"
                                                                    : "ddp/") +
                                        tp + "/" + pp};
  };
  for (Group& g : groups) {
    const auto cls = classes(g.base);
    const bool top_full = static_cast<int>(top_tps.size()) >= o.keep_top;
    bool needed = !top_full || g.optimistic > top_tps.back() || g.optimistic == 0;
    for (const auto& c : cls) {
      const auto it = class_best.find(c);
      if (it == class_best.end() || g.optimistic > it->second) needed = true;
    }
    if (!needed) {
      res.pruned += static_cast<long>(g.layouts.size());
      continue;
    }
    Routing r;
    route(g.base, false, r);
    double best_optimistic = 0;
    std::vector<Evaluation> evals;
    for (const Layout& l : g.layouts) {
      // Unroutable: the axes without a route cost nothing here, an optimistic bound.
      Evaluation e = evaluate_routed(l, r);
      if (!r.routable && e.batch_ok && e.fits)
        best_optimistic = std::max(best_optimistic, e.tokens_per_second);
      evals.push_back(std::move(e));
    }
    if (r.routable || best_optimistic == 0 || !o.search_placement) {
      for (auto& e : evals) {
        if (e.valid()) {
          top_tps.push_back(e.tokens_per_second);
          std::sort(top_tps.begin(), top_tps.end(), std::greater<double>());
          if (static_cast<int>(top_tps.size()) > o.keep_top) top_tps.pop_back();
          for (const auto& c : cls) class_best[c] = std::max(class_best[c], e.tokens_per_second);
        }
        (e.valid() ? res.ranked : rejected).push_back(std::move(e));
      }
    } else {
      pending.push_back({g.base, best_optimistic, std::move(evals)});
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
  if (res.ranked.empty()) res.why_nothing = why_nothing_fits(res.rejected, o);
  return res;
}

}  // namespace vtrn::plan
