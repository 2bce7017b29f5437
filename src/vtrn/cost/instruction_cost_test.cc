// Instruction times against values computed by hand from the NeuronCore-v3 figures (hw cites the
// document each comes from): Tensor 2.4 GHz, Vector 0.96 GHz, Scalar and GpSimd
// 1.2 GHz; MIN_II and MM_INIT_LATENCY 64 cycles; HBM share 2.9 TB/s / 8 = 362.5 GB/s, DMA
// engines 16 x 23 B/ns = 368 GB/s; DMA latency 1,300 ns.
#include "vtrn/cost/instruction_cost.h"

#include <gtest/gtest.h>

namespace vtrn::cost {
namespace {

const InstructionCostModel& m() {
  static const InstructionCostModel model = InstructionCostModel::for_target("trn2");
  return model;
}

TEST(InstructionCostTest, MatmulIssuesOneMovingColumnPerCycle) {
  EXPECT_DOUBLE_EQ(m().matmul_s(512, false), 512 / 2.4e9);
  EXPECT_DOUBLE_EQ(m().matmul_s(16, false), 64 / 2.4e9);  // MM_INIT_LATENCY bound
  EXPECT_DOUBLE_EQ(m().matmul_s(512, true), 4 * 512 / 2.4e9);
}

TEST(InstructionCostTest, FullTileMatmulsMatchTheKernelModelsPeak) {
  // 16 full 128x128x512 bf16 matmuls against cost's tensor time for the same contraction.
  Work w;
  w.batch = 1;
  w.m = 128;
  w.k = 128;
  w.n = 16 * 512;
  w.tensor_dtype = hw::TensorEngineDType::kBF16;
  const double kernel = CostModel::trn2().estimate(w).tensor_s;
  EXPECT_NEAR(16 * m().matmul_s(512, false) / kernel, 1.0, 0.01);
}

TEST(InstructionCostTest, LaneEnginesCostCyclesPerElementWithAFloor) {
  EXPECT_DOUBLE_EQ(m().lane_s(Engine::kVector, 512), 512 / 0.96e9);
  EXPECT_DOUBLE_EQ(m().lane_s(Engine::kVector, 512, 2), 1024 / 0.96e9);
  EXPECT_DOUBLE_EQ(m().lane_s(Engine::kScalar, 8), 64 / 1.2e9);
  EXPECT_DOUBLE_EQ(m().lane_s(Engine::kGpSimd, 1000), 1000 / 1.2e9);
}

TEST(InstructionCostTest, DmaPaysPerRowAndUsesTheHbmShare) {
  // 128 rows of 2 KiB from HBM: (262144 + 128 * 512) B at 362.5 GB/s.
  EXPECT_DOUBLE_EQ(m().dma_transfer_s(262144, 128, true), (262144 + 65536) / 362.5e9);
  // SBUF to SBUF runs at the engines' 368 GB/s.
  EXPECT_DOUBLE_EQ(m().dma_transfer_s(262144, 128, false), (262144 + 65536) / 368e9);
  // Two rows of 1 KiB keep 2 of the 16 engines busy.
  EXPECT_DOUBLE_EQ(m().dma_transfer_s(2048, 2, true), (2048 + 1024) / (362.5e9 * 2 / 16));
  // One contiguous 16 KiB run is split into four 4 KiB pieces on 4 engines.
  EXPECT_DOUBLE_EQ(m().dma_transfer_s(16384, 1, true), (16384 + 512) / (362.5e9 * 4 / 16));
  EXPECT_DOUBLE_EQ(m().dma_latency_s(), 1.3e-6);
}

TEST(InstructionCostTest, UnknownTargetNamesTheKnownOnes) {
  try {
    InstructionCostModel::for_target("trn9");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("trn1 (gen2), trn2 (gen3) or trn3 (gen4)"),
              std::string::npos);
  }
  EXPECT_EQ(InstructionCostModel::for_target("gen2").arch().sbuf_bytes, 24u << 20);
  EXPECT_EQ(InstructionCostModel::for_target("trn3").arch().sbuf_bytes, 32u << 20);
}

}  // namespace
}  // namespace vtrn::cost
