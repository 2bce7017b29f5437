// The planner: per-rank memory and step time of an FSDP / TP / PP / HSDP layout on the modeled
// hardware, the search over every layout of a cluster, and the explanation of the choice in the
// terms of the trn2 best-practices seed ("persistent model state: increase FSDP sharding", ...).
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

#include "vtrn/hw/units.h"
#include "vtrn/plan/model.h"
#include "vtrn/topo/cluster.h"

namespace vtrn::plan {

enum class Precision {
  kBF16MixedFP32Master,  ///< bf16 compute; fp32 master weights, gradients and AdamW state
  kBF16,                 ///< everything bf16
};
enum class Checkpointing { kNone, kSelective, kFull };
enum class Schedule { kGPipe, k1F1B };

std::string_view precision_name(Precision p);          ///< "bf16-fp32-master", "bf16"
std::string_view checkpointing_name(Checkpointing c);  ///< "none", "selective", "full"
std::string_view schedule_name(Schedule s);            ///< "gpipe", "1f1b"
/// Parsers; throw std::invalid_argument listing the accepted names.
Precision parse_precision(std::string_view name);
Checkpointing parse_checkpointing(std::string_view name);
Schedule parse_schedule(std::string_view name);

struct Workload {
  int seq = 4096;           ///< tokens per sequence
  int global_batch = 1024;  ///< sequences per optimizer step
  Precision precision = Precision::kBF16MixedFP32Master;
  Schedule schedule = Schedule::k1F1B;
  bool sequence_parallel = true;  ///< with TP > 1, Megatron sequence parallelism
  int prefetch = 1;               ///< FSDP units all-gathered ahead of the one computing
};

struct Layout {
  int pp = 1, replicate = 1, shard = 1, tp = 1;
  int micro_batch = 1;  ///< sequences per micro-batch
  Checkpointing checkpointing = Checkpointing::kSelective;
  int dp() const { return replicate * shard; }
  int world() const { return pp * replicate * shard * tp; }
  /// Mesh axes of size > 1, outermost first: pp, replicate, shard, tp (("shard",) for one rank).
  std::vector<std::string> mesh_axes() const;
  std::vector<int> mesh_shape() const;
  /// "pp=1,replicate=1,shard=64,tp=1".
  std::string describe() const;
};

/// Parses "pp=1,replicate=1,shard=64,tp=8" (missing axes are 1; micro_batch=, checkpointing= may
/// follow). Throws std::invalid_argument naming the bad part.
Layout parse_layout(std::string_view text);

/// Activation bytes of one transformer block for one micro-batch of |b| sequences, per TP rank,
/// following Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
/// Models", section 4), generalized to GQA (K and V of kv_dim), SwiGLU (four f-wide tensors) and
/// models without dropout (no masks). For GPT-3-like models it equals the paper's formulas:
///   none, no SP:     s b h (10 + 24/t + 5 a s / (h t))
///   none, SP:        s b h (34 + 5 a s / h) / t
///   selective, no SP: s b h (10 + 24/t);  selective, SP: 34 s b h / t
///   full:            2 s b h (per block, the block's input; / t with SP)
double activation_bytes_per_layer(const ModelSpec& model, int seq, int b, int tp,
                                  bool sequence_parallel, Checkpointing checkpointing);

struct MemoryBreakdown {
  double parameters = 0;  ///< persistent parameter shard (fp32 master or bf16)
  double gradients = 0;   ///< persistent gradient shard
  double optimizer = 0;   ///< AdamW m and v shards
  double gathered =
      0;  ///< gathered execution units (current + prefetched) and their unsharded gradients
  double activations = 0;  ///< saved activations of the micro-batches in flight, plus one block's
                           ///< recompute working set
  double logits = 0;       ///< logits, their fp32 loss copy and gradient
  double runtime = 0;      ///< the runtime's reservation (96 MiB per physical core)
  double collectives = 0;  ///< collective and point-to-point staging buffers
  double total = 0;
  double budget = 0;  ///< the logical core's HBM
};

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
  std::string limiting_resource;  ///< the seed's term: "persistent model state", ...
  std::string advice;             ///< the seed's remedy for it
  bool valid() const { return routable && batch_ok && tp_ok && fits; }
};

struct SearchOptions {
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

struct SearchResult {
  std::vector<Evaluation> ranked;  ///< valid layouts, best (most tokens/s) first
  std::vector<Evaluation>
      rejected;        ///< the best-looking rejected layouts (fewest bytes over budget first)
  long evaluated = 0;  ///< layouts evaluated (factorization x checkpointing x micro-batch)
  int factorizations = 0;
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

  /// One layout under its default (row-major) placement, or the placement search's when the
  /// default is not routable and |search_placement|. Throws std::invalid_argument when the
  /// layout's degrees do not multiply to the world.
  Evaluation evaluate(const Layout& layout, bool search_placement = true) const;

  /// Memory of |layout| (routing is not consulted).
  MemoryBreakdown memory(const Layout& layout) const;

  SearchResult search(const SearchOptions& options = {}) const;

  /// Runnable Python that builds the layout's DeviceMesh (init_device_mesh), or
  /// DeviceMesh.from_group with the searched rank matrix for a custom placement.
  std::string mesh_code(const Evaluation& e) const;
  /// A plain-language reason for the choice, in the seed's terms.
  std::string explain(const Evaluation& e) const;

  /// The sentences of SearchResult::alternatives for |best| (search() fills them in).
  std::vector<std::string> alternatives(const Evaluation& best,
                                        const std::vector<Evaluation>& ranked,
                                        const std::vector<Evaluation>& rejected) const;

  /// Per-rank HBM budget of the logical core (hw::InstanceSpec::hbm_per_rank).
  double budget_bytes() const;
  /// Peak bf16 Tensor-engine FLOPs of one logical core.
  double peak_flops_per_rank() const;

 private:
  struct Routing;
  void route(const Layout& layout, bool search_placement, Routing& out) const;
  Evaluation evaluate_routed(const Layout& layout, const Routing& routing) const;
  void classify(Evaluation& e) const;
  ModelSpec model_;
  topo::Cluster cluster_;
  Workload workload_;
};

}  // namespace vtrn::plan
