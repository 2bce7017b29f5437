// The training kernel model against hand-computed cases (docs/planner.md, "Step time").
#include "vtrn/cost/training_kernel.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "vtrn/hw/instance.h"

namespace vtrn::cost {
namespace {

const hw::ChipSpec& trn1() { return *hw::find_instance("trn1.32xlarge").chip; }

hw::StepModel params(double eff, double overhead) {
  hw::StepModel p;
  p.tensor_efficiency = eff;
  p.kernel_overhead_s = overhead;
  return p;
}

TEST(TrainingKernelTest, MovingPiecesCostAtLeast64Cycles) {
  EXPECT_DOUBLE_EQ(moving_efficiency(512), 1.0);
  EXPECT_DOUBLE_EQ(moving_efficiency(4096), 1.0);  // 8 pieces of 512
  EXPECT_DOUBLE_EQ(moving_efficiency(32), 0.5);    // 32 columns in 64 cycles
  EXPECT_DOUBLE_EQ(moving_efficiency(40), 40.0 / 64);
  EXPECT_DOUBLE_EQ(moving_efficiency(600), 1.0);  // 2 pieces of 300
}

TEST(TrainingKernelTest, EfficiencyIsTilePaddingTimesTheSustainedShare) {
  // m = 640 (5 x 128), n = 4096, k = 1728 = 13.5 x 128 -> 1728 / 1792 of the rows.
  const TrainingKernelModel km(trn1(), params(0.5, 0));
  EXPECT_DOUBLE_EQ(km.matmul_efficiency(640, 4096, 1728), 1728.0 / 1792 * 0.5);
  // k = 64 fills half the rows, m = 192 fills 192/256, n = 32 half the cycles.
  EXPECT_DOUBLE_EQ(km.matmul_efficiency(192, 32, 64), 0.5 * 0.75 * 0.5 * 0.5);
}

TEST(TrainingKernelTest, MatmulTimeIsTheSlowerOfTensorAndDmaPlusOverhead) {
  // 2 x 1024^3 FLOPs at 92 TFLOPS x 0.5 = 4.6685e-5 s; DMA 3 x 2 MiB / 272 GB/s = 2.313e-5 s.
  const TrainingKernelModel km(trn1(), params(0.5, 10e-6));
  const double tensor = 2.0 * 1024 * 1024 * 1024 / (92e12 * 0.5);
  EXPECT_NEAR(km.matmul_s(1, 1024, 1024, 1024), 10e-6 + tensor, 1e-15);
  // A thin matmul is memory-bound: m = 128, k = 128, n = 1M tokens moves 2 x 2 x 128 x 1M
  // bytes (operand and result) at 272 GB/s.
  const double n = 1 << 20;
  const double dma = 2.0 * (128.0 * 128 + 128 * n + 128 * n) / 272e9;
  EXPECT_NEAR(km.matmul_s(1, 128, 1 << 20, 128), 10e-6 + dma, 1e-15);
}

TEST(TrainingKernelTest, VectorAndScalarRunOneElementPerLanePerCycle) {
  // trn1 NeuronCore-v2: Vector 1.12 GHz, Scalar 1.4 GHz, 128 lanes.
  const TrainingKernelModel km(trn1(), params(1, 0));
  EXPECT_DOUBLE_EQ(km.vector_elements_per_s(), 128 * 1.12e9);
  EXPECT_DOUBLE_EQ(km.scalar_elements_per_s(), 128 * 1.4e9);
  // Softmax over E = 5 x 4096 x 2048 scores (llama2-13b at TP8): 4 Vector passes = 1.170 ms,
  // 1 Scalar pass 0.234 ms, 4 E bytes 0.617 ms: the Vector engine bounds it.
  const double E = 5.0 * 4096 * 2048;
  EXPECT_NEAR(km.elementwise_s(4 * E, E, 4 * E), 4 * E / (128 * 1.12e9), 1e-12);
  EXPECT_NEAR(4 * E / (128 * 1.12e9), 1.170e-3, 1e-6);
}

TEST(TrainingKernelTest, OutOfBoundsParametersAreRefused) {
  EXPECT_THROW(TrainingKernelModel(trn1(), params(0, 0)), std::invalid_argument);
  EXPECT_THROW(TrainingKernelModel(trn1(), params(1.2, 0)), std::invalid_argument);
  EXPECT_THROW(TrainingKernelModel(trn1(), params(0.5, -1e-6)), std::invalid_argument);
}

TEST(TrainingKernelTest, CalibratedParametersAreWithinPhysicalBounds) {
  const hw::StepModel& p = hw::calibrated_step_model();
  EXPECT_GT(p.tensor_efficiency, 0);
  EXPECT_LE(p.tensor_efficiency, 1);
  EXPECT_GE(p.kernel_overhead_s, 0);
  EXPECT_LT(p.kernel_overhead_s, 1e-3);  // a kernel launch is microseconds, not milliseconds
  EXPECT_GE(p.comm_overlap, 0);
  EXPECT_LT(p.comm_overlap, 1);
  EXPECT_GT(p.error_band, 0);
  EXPECT_LE(p.error_band, 0.25);
  EXPECT_FALSE(p.provenance.empty());
}

}  // namespace
}  // namespace vtrn::cost
