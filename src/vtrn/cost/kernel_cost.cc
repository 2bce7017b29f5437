#include "vtrn/cost/kernel_cost.h"

#include <algorithm>

#include "vtrn/hw/instance.h"
#include "vtrn/hw/neuroncore.h"

namespace vtrn::cost {

std::string_view engine_name(Engine engine) {
  switch (engine) {
    case Engine::kTensor:
      return "tensor";
    case Engine::kVector:
      return "vector";
    case Engine::kScalar:
      return "scalar";
    case Engine::kDma:
      return "dma";
    case Engine::kGpSimd:
      return "gpsimd";
  }
  return "?";
}

CostModel::CostModel(const hw::ChipSpec& chip) : chip_(&chip) {}

const CostModel& CostModel::trn2() {
  static const CostModel model(*hw::find_instance("trn2.48xlarge").chip);
  return model;
}

double CostModel::memory_Bps() const {
  return std::min(chip_->hbm_Bps / chip_->physical_cores, chip_->dma_core_Bps);
}

double CostModel::tile_efficiency(std::int64_t m, std::int64_t k) {
  auto fill = [](std::int64_t x, int tile) {
    if (x <= 0) return 1.0;
    const std::int64_t tiles = (x + tile - 1) / tile;
    return static_cast<double>(x) / static_cast<double>(tiles * tile);
  };
  return fill(k, hw::kTensorArrayRows) * fill(m, hw::kTensorArrayCols);
}

KernelCost CostModel::estimate(const Work& w) const {
  KernelCost c;
  const hw::CorePeaks& peaks = chip_->core;
  if (w.batch > 0) {
    c.flops = 2.0 * static_cast<double>(w.batch) * static_cast<double>(w.m) *
              static_cast<double>(w.n) * static_cast<double>(w.k);
    c.tile_efficiency = tile_efficiency(w.m, w.k);
    c.tensor_s = c.flops / (peaks.tensor(w.tensor_dtype) * c.tile_efficiency);
  }
  c.vector_s = w.vector_ops / peaks.vector_fp32;
  c.scalar_s = w.scalar_ops / peaks.scalar_fp32;
  c.dma_s = w.bytes / memory_Bps();
  c.fixed_s = chip_->dma_latency;
  c.engine = Engine::kDma;
  double worst = c.dma_s;
  if (c.tensor_s > worst) worst = c.tensor_s, c.engine = Engine::kTensor;
  if (c.vector_s > worst) worst = c.vector_s, c.engine = Engine::kVector;
  if (c.scalar_s > worst) worst = c.scalar_s, c.engine = Engine::kScalar;
  c.time_s = c.fixed_s + worst;
  return c;
}

}  // namespace vtrn::cost
