// Per-rank memory of a layout: the persistent parameter, gradient and optimizer shards, the
// gathered FSDP units, the saved activations (Korthikanti et al. 2022), logits, the runtime's
// reservation and the collectives' staging buffers, against the logical core's HBM.
//
// Units: bytes (as doubles), parameters in elements. The model and its assumptions are written
// down in docs/planner.md.
#pragma once

#include <vector>

#include "vtrn/plan/layout.h"
#include "vtrn/plan/model_spec.h"
#include "vtrn/topo/cluster.h"

namespace vtrn::plan {

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

/// Bytes per element of each persistent state under a precision policy, and of the gradient
/// reduction.
struct PrecisionBytes {
  double param, grad, opt, reduce;
};
PrecisionBytes bytes_per_element(Precision p);

/// One pipeline stage: its transformer blocks, and whether it holds the embedding (first) and
/// the head (last).
struct Stage {
  int layers;
  bool first, last;
};
/// The stages whose memory bounds a layout of |pp| stages: ceil(L / pp) blocks each, the first
/// and the last (one stage holding everything when pp == 1).
std::vector<Stage> stages_of(const ModelSpec& m, int pp);

/// Elements of parameters one rank of a stage holds before FSDP sharding (after TP).
struct StageParams {
  double blocks;  ///< transformer blocks: linear weights / tp, norms whole
  double root;    ///< embedding / head / final norm on this stage, vocab-parallel over tp
  double unit;    ///< one block / tp (the FSDP unit)
};
StageParams stage_params(const ModelSpec& m, const Stage& st, int tp, int pp);

struct MemoryBreakdown {
  double parameters = 0;  ///< persistent parameter shard (fp32 master or bf16)
  double gradients = 0;   ///< persistent gradient shard
  double optimizer = 0;   ///< AdamW m and v shards
  // The three transient parts are those of the moment of the step where their sum peaks
  // (peak_moment: "loss", "backward" or "root gradient reduction"; see docs/planner.md).
  double gathered =
      0;  ///< gathered execution units (current + prefetched) and their unsharded gradients
  double activations = 0;  ///< saved activations of the micro-batches in flight, plus one block's
                           ///< recompute working set
  double logits = 0;       ///< logits, their fp32 loss copy and gradient
  const char* peak_moment = "";
  double runtime = 0;      ///< the runtime's reservation (96 MiB per physical core)
  double collectives = 0;  ///< collective and point-to-point staging buffers
  double total = 0;
  double budget = 0;  ///< the logical core's HBM
};

/// HBM of one logical core of |cluster| (hw::InstanceSpec::hbm_per_rank).
double hbm_budget_bytes(const topo::Cluster& cluster);

/// Memory of the most loaded rank of |layout| (routing is not consulted).
MemoryBreakdown memory_per_rank(const ModelSpec& model, const topo::Cluster& cluster,
                                const Workload& workload, const Layout& layout);

}  // namespace vtrn::plan
