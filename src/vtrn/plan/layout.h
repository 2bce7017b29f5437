// What the planner chooses and what it is given: a layout (pipeline stages, replicas, FSDP shard
// group and TP degree, micro-batch and activation checkpointing) and the workload it runs (sequence
// length, global batch, precision policy, pipeline schedule), with their names and parsers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

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

/// Largest sequence length, global batch, micro-batch and FSDP prefetch depth planned: 2^24 each
/// (16M tokens, 16M sequences), far beyond any training run, so token counts stay exact.
inline constexpr int kMaxWorkloadValue = 1 << 24;

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
  /// ZeRO-1: the optimizer state is sharded over the data-parallel ranks; gradients are
  /// reduce-scattered and the updated parameters all-gathered once per step.
  bool zero1 = false;
  int dp() const { return replicate * shard; }
  int world() const { return pp * replicate * shard * tp; }
  /// Mesh axes of size > 1, outermost first: pp, replicate, shard, tp (("shard",) for one rank).
  std::vector<std::string> mesh_axes() const;
  std::vector<int> mesh_shape() const;
  /// "pp=1,replicate=1,shard=64,tp=1" (",zero1=1" appended under ZeRO-1).
  std::string describe() const;
};

/// Parses "pp=1,replicate=1,shard=64,tp=8" (missing axes are 1; micro_batch=, checkpointing= and
/// zero1=0|1 may follow). Throws std::invalid_argument naming the bad part.
Layout parse_layout(std::string_view text);

}  // namespace vtrn::plan
