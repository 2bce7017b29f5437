// The modeled time of one NKI instruction on the engine that runs it.
//
// Where kernel_cost.h prices a whole kernel from its FLOPs and bytes, this prices single
// engine instructions the way the Neuron architecture guide does, in engine cycles:
//   * Tensor engine matmul: max(N, MM_INIT_LATENCY) cycles for N moving columns, 4x for fp32
//     operands. With full 128x128 tiles this is the same peak rate kernel_cost.h uses
//     (2*128*128 FLOPs per cycle at the Tensor clock), so the two models agree on a
//     tensor-bound kernel.
//   * Vector, Scalar and GpSimd engines: max(MIN_II, c*N) cycles for N elements per partition
//     (c = 1 for one input, 2 for two inputs on the Vector engine, 8 for Vector reciprocal);
//     all 128 lanes run in parallel, so the partition count does not matter.
//   * DMA: (bytes + rows * row overhead) / bandwidth, where the bandwidth is the core's HBM
//     share (kernel_cost.h's memory_Bps) when HBM is involved, the DMA engines' otherwise, and
//     scales down when fewer rows (or 4 KiB pieces of one long row) than DMA engines can run
//     in parallel. The transfer completes one DMA start latency after it ends.
// Every figure comes from hw (neuroncore.h, specs.cc).
#pragma once

#include <cstdint>

#include "vtrn/cost/kernel_cost.h"
#include "vtrn/hw/neuroncore.h"

namespace vtrn::cost {

class InstructionCostModel {
 public:
  InstructionCostModel(const hw::CoreArch& arch, const hw::ChipSpec& chip);
  /// The model of |target| ("trn1", "trn2", "trn3" or "gen2".."gen4"); throws
  /// std::invalid_argument naming the known targets.
  static InstructionCostModel for_target(std::string_view target);

  const hw::CoreArch& arch() const { return *arch_; }
  const hw::ChipSpec& chip() const { return *chip_; }

  /// One nc_matmul with |moving_free| moving columns; |fp32| when the operands are fp32/tf32.
  double matmul_s(std::int64_t moving_free, bool fp32) const;
  /// An instruction on |engine| (Vector, Scalar or GpSimd) reading |elements_per_partition|
  /// elements per partition at |cycles_per_element|.
  double lane_s(Engine engine, std::int64_t elements_per_partition,
                double cycles_per_element = 1) const;
  /// Seconds |engine| spends per cycle.
  double cycle_s(Engine engine) const;
  /// Transfer time of a DMA moving |bytes| in |rows| contiguous runs; |hbm| when either side
  /// is HBM.
  double dma_transfer_s(double bytes, std::int64_t rows, bool hbm) const;
  /// Time from the end of a DMA transfer until its data is usable.
  double dma_latency_s() const;

 private:
  const hw::CoreArch* arch_;
  const hw::ChipSpec* chip_;
  CostModel kernel_model_;
};

}  // namespace vtrn::cost
