#include "vtrn/cost/instruction_cost.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "vtrn/hw/instance.h"

namespace vtrn::cost {

InstructionCostModel::InstructionCostModel(const hw::CoreArch& arch, const hw::ChipSpec& chip)
    : arch_(&arch), chip_(&chip), kernel_model_(chip) {}

InstructionCostModel InstructionCostModel::for_target(std::string_view target) {
  const hw::CoreArch* arch = hw::find_core_arch(target);
  if (arch == nullptr) {
    throw std::invalid_argument("unknown NKI target '" + std::string(target) +
                                "'; use trn1 (gen2), trn2 (gen3) or trn3 (gen4)");
  }
  return InstructionCostModel(*arch, *hw::find_instance(arch->instance).chip);
}

double InstructionCostModel::cycle_s(Engine engine) const {
  switch (engine) {
    case Engine::kTensor:
      return 1.0 / arch_->tensor_hz;
    case Engine::kVector:
      return 1.0 / arch_->vector_hz;
    case Engine::kScalar:
      return 1.0 / arch_->scalar_hz;
    case Engine::kGpSimd:
      return 1.0 / arch_->gpsimd_hz;
    case Engine::kDma:
      return 0;
  }
  return 0;
}

double InstructionCostModel::matmul_s(std::int64_t moving_free, bool fp32) const {
  const double columns =
      static_cast<double>(moving_free) * (fp32 ? hw::kMatmulFp32CycleFactor : 1.0);
  return std::max(columns, hw::kMatmulInitCycles) * cycle_s(Engine::kTensor);
}

double InstructionCostModel::lane_s(Engine engine, std::int64_t elements_per_partition,
                                    double cycles_per_element) const {
  const double cycles = static_cast<double>(elements_per_partition) * cycles_per_element;
  return std::max(cycles, hw::kMinInstructionCycles) * cycle_s(engine);
}

double InstructionCostModel::dma_transfer_s(double bytes, std::int64_t rows, bool hbm) const {
  const double peak = hbm ? kernel_model_.memory_Bps() : chip_->dma_core_Bps;
  // Rows run on separate engines; a long contiguous run is split into saturating pieces.
  const double pieces = std::max<double>(static_cast<double>(std::max<std::int64_t>(rows, 1)),
                                         std::ceil(bytes / hw::kDmaSaturatingRowBytes));
  const double parallel = std::min<double>(pieces, arch_->dma_engines);
  const double bandwidth = peak * parallel / arch_->dma_engines;
  return (bytes + static_cast<double>(rows) * hw::kDmaRowOverheadBytes) / bandwidth;
}

double InstructionCostModel::dma_latency_s() const { return chip_->dma_latency; }

}  // namespace vtrn::cost
