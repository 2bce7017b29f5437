// Memory terms against hand-computed values and the Korthikanti et al. (2022) formulas.
#include <gtest/gtest.h>

#include "vtrn/plan/memory.h"
#include "vtrn/plan/planner.h"

namespace vtrn::plan {
namespace {

// GPT-3 175B (a = 96, h = 12288), s = 2048, b = 1, t = 8: the paper's closed forms (section 4,
// table 2), with s b h = 2048 x 12288 = 25,165,824 and 5 a s / (h t) = 5 x 96 x 2048 / 98304 = 10.
constexpr double kSbh = 2048.0 * 12288.0;

TEST(Korthikanti, NoRecomputeNoSequenceParallel) {
  // s b h (10 + 24/t + 5 a s / (h t)) = sbh (10 + 3 + 10) = 23 sbh
  EXPECT_DOUBLE_EQ(
      activation_bytes_per_layer(find_preset("gpt3-175b"), 2048, 1, 8, false, Checkpointing::kNone),
      23 * kSbh);
}
TEST(Korthikanti, NoRecomputeWithSequenceParallel) {
  // s b h (34 + 5 a s / h) / t = sbh (34 + 80) / 8 = 14.25 sbh
  EXPECT_DOUBLE_EQ(
      activation_bytes_per_layer(find_preset("gpt3-175b"), 2048, 1, 8, true, Checkpointing::kNone),
      14.25 * kSbh);
}
TEST(Korthikanti, SelectiveRecompute) {
  // no SP: s b h (10 + 24/t) = 13 sbh; SP: 34 s b h / t = 4.25 sbh
  const ModelSpec& m = find_preset("gpt3-175b");
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 2048, 1, 8, false, Checkpointing::kSelective),
                   13 * kSbh);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 2048, 1, 8, true, Checkpointing::kSelective),
                   4.25 * kSbh);
}
TEST(Korthikanti, FullRecomputeKeepsTheBlockInput) {
  // 2 s b h per layer (the paper's 2 s b h L); split by t with SP
  const ModelSpec& m = find_preset("gpt3-175b");
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 2048, 1, 8, false, Checkpointing::kFull),
                   2 * kSbh);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 2048, 1, 8, true, Checkpointing::kFull),
                   2 * kSbh / 8);
}
TEST(Korthikanti, OneRankIs34PlusScores) {
  // t = 1: s b h (34 + 5 a s / h) = sbh (34 + 80), micro-batch 2 doubles it
  const ModelSpec& m = find_preset("gpt3-175b");
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 2048, 2, 1, false, Checkpointing::kNone),
                   2 * 114 * kSbh);
}
TEST(Activations, LlamaWithoutDropoutAndWithSwiGLU) {
  // llama2-7b, s = 4096, b = 1, t = 1, selective: norms 4 sbh + QKV and MLP inputs 4 sbh, Q K V and
  // the output projection's input 8 sbh (MHA), SwiGLU 8 s b f; no dropout masks:
  // 4096 x (16 x 4096 + 8 x 11008) = 4096 x 153,600 = 629,145,600 bytes
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(find_preset("llama2-7b"), 4096, 1, 1, false,
                                              Checkpointing::kSelective),
                   629'145'600.0);
}
TEST(Activations, GroupedQueryAttentionStoresSmallerKV) {
  // llama3-8b vs a multi-head copy: K and V are kv_dim = 1024 wide instead of 4096:
  // difference 4 s b (4096 - 1024) = 4 x 4096 x 3072 bytes at s = 4096.
  ModelSpec mha = find_preset("llama3-8b");
  mha.kv_heads = mha.heads;
  const double gqa = activation_bytes_per_layer(find_preset("llama3-8b"), 4096, 1, 1, false,
                                                Checkpointing::kSelective);
  const double full = activation_bytes_per_layer(mha, 4096, 1, 1, false, Checkpointing::kSelective);
  EXPECT_DOUBLE_EQ(full - gqa, 4.0 * 4096 * 3072);
}

// llama2-7b on one trn2.48xlarge (LNC2), FSDP64, micro-batch 1, selective, s = 2048, mixed
// precision.
TEST(Memory, Llama2_7bFsdp64ByPart) {
  topo::Cluster cluster("trn2.48xlarge", 2, 1);
  Workload w;
  w.seq = 2048;
  w.global_batch = 512;
  Layout l;
  l.shard = 64;
  l.checkpointing = Checkpointing::kSelective;
  const MemoryBreakdown m = memory_per_rank(find_preset("llama2-7b"), cluster, w, l);
  // 6,738,415,616 parameters / 64 = 105,287,744 per rank: fp32 weights, fp32 gradients, 2 x fp32
  // AdamW
  EXPECT_DOUBLE_EQ(m.parameters, 105'287'744.0 * 4);
  EXPECT_DOUBLE_EQ(m.gradients, 105'287'744.0 * 4);
  EXPECT_DOUBLE_EQ(m.optimizer, 105'287'744.0 * 8);
  // The peak is in the backward through the blocks (docs/planner.md, "Memory per rank"). One
  // block = 202,383,360 parameters: current + prefetched in bf16 (2 x 2 B), its unsharded
  // gradient (bf16 2 B + fp32 reduce copy 4 B) = 10 B per element; the root unit (embedding,
  // head, final norm = 262,148,096) kept gathered in bf16; the head's and final norm's bf16
  // gradients (32000 x 4096 + 4096), which wait for the root unit's reduction.
  EXPECT_STREQ(m.peak_moment, "backward");
  EXPECT_DOUBLE_EQ(m.gathered,
                   202'383'360.0 * 10 + 262'148'096.0 * 2 + (32000.0 * 4096 + 4096) * 2);
  // 32 layers x 2048 x 153,600 bytes (see Activations.LlamaWithoutDropoutAndWithSwiGLU)
  EXPECT_DOUBLE_EQ(m.activations, 32 * 2048.0 * 153'600);
  // the logits and their gradient are gone by then
  EXPECT_DOUBLE_EQ(m.logits, 0);
  // the runtime keeps 96 MiB on each of the logical core's two physical cores
  EXPECT_DOUBLE_EQ(m.runtime, 2.0 * 96 * 1048576);
  EXPECT_DOUBLE_EQ(m.collectives, 0);
  // 96 GiB per chip / 4 logical cores
  EXPECT_DOUBLE_EQ(m.budget, 24.0 * 1073741824);
  EXPECT_DOUBLE_EQ(m.total, m.parameters + m.gradients + m.optimizer + m.gathered + m.activations +
                                m.logits + m.runtime);
  // The planner reports the same figures.
  EXPECT_DOUBLE_EQ(Planner(find_preset("llama2-7b"), cluster, w).memory(l).total, m.total);
}

// Without sharding (DDP) the gathered part is autocast's bf16 block copy at every moment, so the
// loss, where the logits (2048 tokens x 32000 x (2 + 4 + 4) bytes) join the saved activations,
// is the peak.
TEST(Memory, WithoutShardingThePeakIsAtTheLoss) {
  topo::Cluster cluster("trn2.48xlarge", 2, 1);
  Workload w;
  w.seq = 2048;
  w.global_batch = 64;
  Layout l;
  l.replicate = 64;
  l.checkpointing = Checkpointing::kSelective;
  const MemoryBreakdown m = memory_per_rank(find_preset("llama2-7b"), cluster, w, l);
  EXPECT_STREQ(m.peak_moment, "loss");
  EXPECT_DOUBLE_EQ(m.gathered, 202'383'360.0 * 2);
  EXPECT_DOUBLE_EQ(m.activations, 32 * 2048.0 * 153'600);
  EXPECT_DOUBLE_EQ(m.logits, 2048.0 * 32000 * 10);
}

// A large vocabulary over a small, fully checkpointed model: the root unit's reduction at the end
// of the backward holds the most. llama3-8b's root unit (embedding and head, 128256 x 4096 each,
// and the final norm) is gathered in bf16 with its bf16 gradients and their fp32 copy: 8 B per
// element, and no activation is left.
TEST(Memory, ALargeVocabularyPeaksAtTheRootGradientReduction) {
  topo::Cluster cluster("trn2.48xlarge", 2, 1);
  Workload w;
  w.seq = 512;
  w.global_batch = 64;
  Layout l;
  l.shard = 64;
  l.checkpointing = Checkpointing::kFull;
  const MemoryBreakdown m = memory_per_rank(find_preset("llama3-8b"), cluster, w, l);
  EXPECT_STREQ(m.peak_moment, "root gradient reduction");
  EXPECT_DOUBLE_EQ(m.gathered, (2 * 128256.0 * 4096 + 4096) * 8);
  EXPECT_DOUBLE_EQ(m.activations, 0);
  EXPECT_DOUBLE_EQ(m.logits, 0);
}

TEST(Memory, ShardingDividesPersistentStateButNotTheGatheredBlock) {
  topo::Cluster cluster("trn2.48xlarge", 2, 4);
  Workload w;
  w.seq = 2048;
  const ModelSpec& model = find_preset("llama3-70b");
  Layout a, b;
  a.shard = 64, a.tp = 4, a.replicate = 1;
  b = a;
  b.shard = 16, b.replicate = 4;
  const MemoryBreakdown ma = memory_per_rank(model, cluster, w, a);
  const MemoryBreakdown mb = memory_per_rank(model, cluster, w, b);
  EXPECT_DOUBLE_EQ(mb.parameters, 4 * ma.parameters);
  EXPECT_DOUBLE_EQ(mb.gathered, ma.gathered);
  EXPECT_DOUBLE_EQ(mb.activations, ma.activations);
}

TEST(Memory, PureBf16HalvesPersistentState) {
  topo::Cluster cluster("trn2.48xlarge", 2, 1);
  Workload mixed, bf16;
  bf16.precision = Precision::kBF16;
  Layout l;
  l.shard = 64;
  const MemoryBreakdown a = memory_per_rank(find_preset("llama2-7b"), cluster, mixed, l);
  const MemoryBreakdown b = memory_per_rank(find_preset("llama2-7b"), cluster, bf16, l);
  EXPECT_DOUBLE_EQ(b.parameters + b.gradients + b.optimizer,
                   (a.parameters + a.gradients + a.optimizer) / 2);
}

TEST(Memory, GPipeHoldsEveryMicroBatch1F1BOnlyPp) {
  topo::Cluster cluster("trn2.48xlarge", 2, 2);
  Workload w;
  w.seq = 2048;
  w.global_batch = 128;
  Layout l;
  l.pp = 2, l.shard = 16, l.tp = 4;  // 128 / 16 = 8 micro-batches of 1
  w.schedule = Schedule::k1F1B;
  const double one = memory_per_rank(find_preset("llama2-13b"), cluster, w, l).activations;
  w.schedule = Schedule::kGPipe;
  const double gpipe = memory_per_rank(find_preset("llama2-13b"), cluster, w, l).activations;
  EXPECT_DOUBLE_EQ(gpipe / one, 8.0 / 2.0);
}

}  // namespace
}  // namespace vtrn::plan
