// The fused attention kernel's work and time against a hand computation from the Trainium2
// figures (hw/specs.cc cites each document): Tensor 79 BF16 TFLOPS, Vector 1 TFLOPS, Scalar
// 1.2 TFLOPS per NeuronCore-v3, HBM 2.9 TB/s / 8 cores = 362.5 GB/s, DMA fixed cost 1,300 ns.
#include "vtrn/cost/attention_cost.h"

#include <gtest/gtest.h>

namespace vtrn::cost {
namespace {

// One TP rank's attention of Llama-3-70B under TP4: 16 heads (key/value repeated to 16),
// sequence 4096, head size 128, causal, bf16.
AttentionShape llama70b_tp4() {
  AttentionShape a;
  a.batch = 1;
  a.heads = a.kv_heads = 16;
  a.q_len = a.kv_len = 4096;
  a.head_dim = 128;
  a.causal = true;
  return a;
}

TEST(AttentionCostTest, CausalForwardIsTensorBoundAndNeverMovesTheScores) {
  const KernelCost c = CostModel::trn2().estimate(flash_attention_forward(llama70b_tp4()));
  // 4 b h L (S/2) d = 4 * 16 * 4096 * 2048 * 128 FLOPs.
  EXPECT_DOUBLE_EQ(c.flops, 68719476736.0);
  EXPECT_DOUBLE_EQ(c.tile_efficiency, 1.0);  // L and d fill the 128 x 128 array
  EXPECT_NEAR(c.tensor_s, 68719476736.0 / 79e12, 1e-12);
  // 4 Vector passes and 1 exp over 16 * 4096 * 2048 = 134217728 visible scores.
  EXPECT_NEAR(c.vector_s, 4 * 134217728.0 / 1e12, 1e-12);
  EXPECT_NEAR(c.scalar_s, 134217728.0 / 1.2e12, 1e-12);
  // Q, K, V, O of 16 * 4096 * 128 bf16 elements each and a float32 logsumexp per query row:
  // 4 * 8388608 * 2 + 16 * 4096 * 4 bytes. The 4096 x 4096 scores never reach HBM.
  EXPECT_NEAR(c.dma_s, (4 * 8388608.0 * 2 + 16 * 4096 * 4) / 362.5e9, 1e-12);
  EXPECT_EQ(c.engine, Engine::kTensor);
  EXPECT_NEAR(c.time_s, 1.3e-6 + 68719476736.0 / 79e12, 1e-12);
}

TEST(AttentionCostTest, BackwardDoesFiveContractionsOverTheSameScores) {
  const KernelCost c = CostModel::trn2().estimate(flash_attention_backward(llama70b_tp4()));
  EXPECT_DOUBLE_EQ(c.flops, 2.5 * 68719476736.0);  // 10 b h L (S/2) d
  EXPECT_NEAR(c.vector_s, (4 * 134217728.0 + 2 * 8388608.0) / 1e12, 1e-12);
  // Q, K, V, O, dO read, dQ, dK, dV written, the logsumexp read.
  EXPECT_NEAR(c.dma_s, (8 * 8388608.0 * 2 + 16 * 4096 * 4) / 362.5e9, 1e-12);
  EXPECT_EQ(c.engine, Engine::kTensor);
  EXPECT_NEAR(c.time_s, 1.3e-6 + 2.5 * 68719476736.0 / 79e12, 1e-12);
}

TEST(AttentionCostTest, NoMaskSeesEveryKeyAndGroupedKeysAreReadOnce) {
  AttentionShape a = llama70b_tp4();
  a.causal = false;
  a.kv_heads = 2;  // 8 query heads per key/value head
  a.head_dim = 64;
  const Work w = flash_attention_forward(a);
  EXPECT_EQ(w.n, 4096);
  EXPECT_EQ(w.batch, 2 * 16);
  // Q and O of 16 heads, K and V of 2, 64 wide, bf16; the logsumexp in float32.
  EXPECT_DOUBLE_EQ(w.bytes, (2 * 16.0 + 2 * 2.0) * 4096 * 64 * 2 + 16.0 * 4096 * 4);
  // A head size of 64 fills half the array's rows: the contraction takes twice as long.
  const KernelCost c = CostModel::trn2().estimate(w);
  EXPECT_DOUBLE_EQ(c.tile_efficiency, 0.5);
  EXPECT_NEAR(c.tensor_s, 4.0 * 16 * 4096 * 4096 * 64 / (79e12 * 0.5), 1e-12);
}

}  // namespace
}  // namespace vtrn::cost
