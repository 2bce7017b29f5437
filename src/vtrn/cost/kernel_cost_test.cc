// Kernel times against values computed by hand from the Trainium2 figures (hw/specs.cc cites the
// document each comes from):
//   Tensor 79 BF16 / 20 FP32 TFLOPS, Vector 1 TFLOPS, Scalar 1.2 TFLOPS per NeuronCore-v3;
//   HBM 2.9 TB/s per chip / 8 cores = 362.5 GB/s (below DMA 16 x 23 B/ns = 368 GB/s);
//   DMA fixed cost 1,300 ns.
#include "vtrn/cost/kernel_cost.h"

#include <gtest/gtest.h>

#include "vtrn/hw/instance.h"

namespace vtrn::cost {
namespace {

const CostModel& m() { return CostModel::trn2(); }

TEST(KernelCostTest, MemoryBandwidthPerCore) { EXPECT_DOUBLE_EQ(m().memory_Bps(), 362.5e9); }

TEST(KernelCostTest, TileEfficiency) {
  EXPECT_DOUBLE_EQ(CostModel::tile_efficiency(128, 128), 1.0);
  EXPECT_DOUBLE_EQ(CostModel::tile_efficiency(64, 128), 0.5);
  EXPECT_DOUBLE_EQ(CostModel::tile_efficiency(129, 128), 129.0 / 256.0);
  EXPECT_DOUBLE_EQ(CostModel::tile_efficiency(64, 32), 0.5 * 0.25);
}

TEST(KernelCostTest, LargeBf16MatmulIsTensorBound) {
  // 4096^3 bf16: 2*4096^3 = 137438953472 FLOP at 79e12 -> 1.7397e-3 s.
  // Bytes 3 * 4096^2 * 2 = 100663296 -> 2.777e-4 s: compute-bound.
  Work w;
  w.batch = 1;
  w.m = w.n = w.k = 4096;
  w.tensor_dtype = hw::TensorEngineDType::kBF16;
  w.bytes = 3.0 * 4096 * 4096 * 2;
  const KernelCost c = m().estimate(w);
  EXPECT_EQ(c.engine, Engine::kTensor);
  EXPECT_DOUBLE_EQ(c.flops, 137438953472.0);
  EXPECT_NEAR(c.tensor_s, 137438953472.0 / 79e12, 1e-12);
  EXPECT_NEAR(c.dma_s, 100663296.0 / 362.5e9, 1e-12);
  EXPECT_NEAR(c.time_s, 1.3e-6 + 137438953472.0 / 79e12, 1e-12);
}

TEST(KernelCostTest, SmallMatmulPaysTileEfficiency) {
  // 64 x 32 . 32 x 512 fp32: 2*64*512*32 = 2097152 FLOP; array filled 32/128 * 64/128 = 1/8
  // -> 2097152 / (20e12 / 8) = 8.388608e-7 s. Bytes (64*32 + 32*512 + 64*512) * 4 = 204800
  // -> 5.6497e-7 s. Tensor-bound.
  Work w;
  w.batch = 1;
  w.m = 64;
  w.k = 32;
  w.n = 512;
  w.bytes = 204800;
  const KernelCost c = m().estimate(w);
  EXPECT_DOUBLE_EQ(c.tile_efficiency, 0.125);
  EXPECT_NEAR(c.tensor_s, 8.388608e-7, 1e-15);
  EXPECT_EQ(c.engine, Engine::kTensor);
  EXPECT_NEAR(c.time_s, 1.3e-6 + 8.388608e-7, 1e-15);
}

TEST(KernelCostTest, ElementwiseChainIsMemoryBound) {
  // 5 ops over 16M f32 elements, fused: reads 16M*4, writes 16M*4 = 134217728 bytes
  // -> 3.7025e-4 s; Vector 5 * 16777216 / 1e12 = 8.389e-5 s.
  Work w;
  w.vector_ops = 5.0 * 16777216;
  w.bytes = 2.0 * 16777216 * 4;
  const KernelCost c = m().estimate(w);
  EXPECT_EQ(c.engine, Engine::kDma);
  EXPECT_NEAR(c.vector_s, 8.388608e-5, 1e-15);
  EXPECT_NEAR(c.time_s, 1.3e-6 + 134217728.0 / 362.5e9, 1e-15);
}

TEST(KernelCostTest, TranscendentalsUseTheScalarEngine) {
  // exp over 1M elements, little traffic: 1048576 / 1.2e12 s on the Scalar engine.
  Work w;
  w.scalar_ops = 1048576;
  w.bytes = 1000;
  const KernelCost c = m().estimate(w);
  EXPECT_EQ(c.engine, Engine::kScalar);
  EXPECT_NEAR(c.scalar_s, 1048576 / 1.2e12, 1e-18);
}

TEST(KernelCostTest, Trainium1UsesItsOwnPeaks) {
  // trn1 NeuronCore-v2: 23 FP32 TFLOPS, HBM 820 GiB/s / 2 cores = 440234147840 B/s (< 272 GB/s DMA?
  // no: DMA 16 x 17 B/ns = 272 GB/s is lower, so 272e9 bounds).
  const CostModel trn1(*hw::find_instance("trn1.32xlarge").chip);
  EXPECT_DOUBLE_EQ(trn1.memory_Bps(), 272e9);
  Work w;
  w.batch = 1;
  w.m = w.n = w.k = 1024;
  const KernelCost c = trn1.estimate(w);
  EXPECT_NEAR(c.tensor_s, 2.0 * 1024 * 1024 * 1024 / 23e12, 1e-15);
}

}  // namespace
}  // namespace vtrn::cost
