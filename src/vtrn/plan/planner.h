// The planner: per-rank memory and step time of an FSDP / TP / PP / HSDP layout on the modeled
// hardware, the search over every layout of a cluster, and the explanation of the choice in the
// terms of "Best practices for training on AWS Neuron" ("persistent model state: increase FSDP
// sharding", ...).
//
// Units are in the names: *_bytes are bytes, *_s seconds. The model and its assumptions are
// written down in docs/planner.md; every hardware figure comes from hw, every collective time
// from coll, every kernel time from cost.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vtrn/plan/layout.h"
#include "vtrn/plan/memory.h"
#include "vtrn/plan/model_spec.h"
#include "vtrn/plan/step_time.h"
#include "vtrn/topo/cluster.h"

namespace vtrn::plan {

struct Evaluation {
  Layout layout;
  bool routable = true;
  bool custom_placement = false;  ///< routable only under the placement search's rank order
  std::vector<int> placement;     ///< rank at each mesh position when custom_placement
  std::string route_error;        ///< first unroutable group's error
  bool batch_ok = true;
  std::string batch_error;
  bool tp_ok = true;  ///< TP divides the attention heads
  std::string tp_error;
  MemoryBreakdown memory;
  bool fits = false;
  TimeBreakdown time;
  double tokens_per_second = 0;
  double mfu = 0;
  double model_flops_per_step = 0;
  std::string limiting_resource;  ///< the guide's term: "persistent model state", ...
  std::string advice;             ///< the guide's remedy for it
  bool valid() const { return routable && batch_ok && tp_ok && fits; }
};

struct LayoutSearchOptions {
  std::vector<Checkpointing> checkpointing = {Checkpointing::kNone, Checkpointing::kSelective,
                                              Checkpointing::kFull};
  std::vector<int> micro_batches = {1, 2, 4, 8};
  std::vector<int> tp_degrees = {1, 2, 4, 8, 16, 32, 64};
  bool allow_pp = true;
  bool search_placement = true;  ///< try the placement search when the default is not routable
  int keep_top =
      10;  ///< the placement search runs only for layouts that could enter this many best
  /// At most this many placement searches (the most promising first): each routes every group of
  /// the world for every candidate order, about 0.05 s at 4,096 ranks.
  int max_placement_searches = 6;
};

struct LayoutSearchResult {
  std::vector<Evaluation> ranked;  ///< valid layouts, best (most tokens/s) first
  std::vector<Evaluation>
      rejected;        ///< the best-looking rejected layouts (fewest bytes over budget first)
  long evaluated = 0;  ///< layouts evaluated (factorization x checkpointing x micro-batch)
  int factorizations = 0;
  /// Layouts never timed: dominated by one with less recomputation that fits, or whose
  /// optimistic bound (collectives free) could not change the ranking or the alternatives.
  long pruned = 0;
  int placement_searches = 0;  ///< unroutable defaults handed to the placement search
  int placement_searches_skipped =
      0;                    ///< unroutable defaults that could not enter the top keep_top
  std::string why_nothing;  ///< when ranked is empty: why, and what would fit
  /// Why not the nearest alternatives to the best layout (no TP / TP4, FSDP vs HSDP, PP, no
  /// checkpointing), each in one sentence with its slowdown or why it does not fit.
  std::vector<std::string> alternatives;
};

class Planner {
 public:
  /// Throws std::invalid_argument for a bad model or workload (zero batch, sequence, ...).
  Planner(ModelSpec model, const topo::Cluster& cluster, Workload workload);

  const ModelSpec& model() const { return model_; }
  const topo::Cluster& cluster() const { return cluster_; }
  const Workload& workload() const { return workload_; }
  /// The step model's parameters: the calibrated ones unless replaced (bench/calibrate.py
  /// replaces them while fitting). Throws std::invalid_argument for out-of-bounds values.
  const hw::StepModel& step_model() const { return params_; }
  void set_step_model(const hw::StepModel& params);

  /// One layout under its default (row-major) placement, or the placement search's when the
  /// default is not routable and |search_placement|. Throws std::invalid_argument when the
  /// layout's degrees do not multiply to the world.
  Evaluation evaluate(const Layout& layout, bool search_placement = true) const;

  /// |layout| routed once and evaluated under each of |params| (the calibration's fit).
  std::vector<Evaluation> evaluate_each(const Layout& layout,
                                        const std::vector<hw::StepModel>& params) const;

  /// Memory of |layout| (routing is not consulted).
  MemoryBreakdown memory(const Layout& layout) const;

  LayoutSearchResult search(const LayoutSearchOptions& options = {}) const;

  /// A plain-language reason for the choice, in the guide's terms.
  std::string explain(const Evaluation& e) const;

  /// The sentences of LayoutSearchResult::alternatives for |best| (search() fills them in).
  std::vector<std::string> alternatives(const Evaluation& best,
                                        const std::vector<Evaluation>& ranked,
                                        const std::vector<Evaluation>& rejected) const;

  /// Per-rank HBM budget of the logical core (hw::InstanceSpec::hbm_per_rank).
  double budget_bytes() const;
  /// Peak bf16 Tensor-engine FLOPs of one logical core.
  double peak_flops_per_rank() const;

 private:
  // Routing of one factorization: the worst group's route of each axis (by the modeled time of
  // a probe all-gather), whether every group is routable, and the placement used.
  struct Routing {
    bool routable = true;
    bool custom = false;
    std::vector<int> placement;
    std::string error;
    AxisRoutes routes;
  };
  void route(const Layout& layout, bool search_placement, Routing& out) const;
  // |known|: the layout's memory, already computed; when it does not fit, the step is not timed.
  Evaluation evaluate_routed(const Layout& layout, const Routing& routing,
                             const MemoryBreakdown* known = nullptr) const;
  // A layout over the memory budget |mem|, checked and classified without routing or timing.
  Evaluation evaluate_unfit(const Layout& layout, const MemoryBreakdown& mem) const;
  void classify(Evaluation& e) const;
  /// LayoutSearchResult::why_nothing: the closest of |rejected| (most promising first), what it
  /// needs and what limits it, and how many nodes would fit the model.
  std::string why_nothing_fits(const std::vector<Evaluation>& rejected,
                               const LayoutSearchOptions& options) const;
  ModelSpec model_;
  topo::Cluster cluster_;
  Workload workload_;
  hw::StepModel params_ = hw::calibrated_step_model();
};

}  // namespace vtrn::plan
