// Step time of a layout: forward, backward and recompute of every micro-batch from the modeled
// kernel times (cost), the TP, FSDP, replica and pipeline collectives from the routes of the
// mesh's groups (coll), how much of each compute hides, the pipeline bubble and the optimizer.
//
// Units: seconds. The model and its assumptions are written down in docs/planner.md.
#pragma once

#include <cstdint>
#include <optional>

#include "vtrn/coll/route.h"
#include "vtrn/hw/step_model.h"
#include "vtrn/plan/layout.h"
#include "vtrn/plan/model_spec.h"
#include "vtrn/topo/cluster.h"

namespace vtrn::plan {

struct TimeBreakdown {
  double compute_s = 0;         ///< forward + backward of every micro-batch (without recompute)
  double recompute_s = 0;       ///< extra forward work of activation checkpointing
  double tp_s = 0;              ///< TP all-reduces (or SP all-gathers + reduce-scatters), exposed
  double fsdp_exposed_s = 0;    ///< FSDP all-gather / reduce-scatter time compute does not hide
  double fsdp_total_s = 0;      ///< all of it, hidden or not
  bool fsdp_internode = false;  ///< the shard groups cross nodes
  double dp_exposed_s = 0;      ///< HSDP / DDP gradient all-reduce across replicas, exposed
  double dp_total_s = 0;
  double pp_p2p_s = 0;     ///< stage-boundary send/recv
  double bubble_s = 0;     ///< pipeline bubble
  double optimizer_s = 0;  ///< AdamW step, HBM-bound
  double step_s = 0;
};

/// The route of each mesh axis: the slowest group of the axis (nullopt where the layout has no
/// such axis; an unroutable route where one of its groups cannot be routed).
struct AxisRoutes {
  std::optional<coll::Route> pp, replicate, shard, tp;
};

/// Peak bf16 Tensor-engine FLOPs of one logical core of |cluster|.
double peak_flops_per_rank(const topo::Cluster& cluster);

/// The step time of |layout| (whose batch divides evenly) with its axes on |routes|; an axis
/// without a route costs nothing.
TimeBreakdown step_time(const ModelSpec& m, const topo::Cluster& cluster, const Workload& workload,
                        const Layout& l, const AxisRoutes& routes);
/// The same under |params| instead of the calibrated step model.
TimeBreakdown step_time(const ModelSpec& m, const topo::Cluster& cluster, const Workload& workload,
                        const Layout& l, const AxisRoutes& routes, const hw::StepModel& params);

/// Key/value features one TP rank computes: ceil(kv_heads / tp) heads, so past kv_heads ranks
/// each KV head is duplicated.
std::int64_t kv_dim_per_rank(const ModelSpec& m, int tp);

}  // namespace vtrn::plan
