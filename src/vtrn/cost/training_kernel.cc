#include "vtrn/cost/training_kernel.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace vtrn::cost {

double moving_efficiency(std::int64_t n) {
  if (n <= 0) return 1;
  const double pieces = static_cast<double>((n + hw::kCoreArchs[0].gemm_moving_fmax - 1) /
                                            hw::kCoreArchs[0].gemm_moving_fmax);
  const double N = static_cast<double>(n) / pieces;
  return N / std::max(N, hw::kMatmulInitCycles);
}

TrainingKernelModel::TrainingKernelModel(const hw::ChipSpec& chip, const hw::StepModel& params)
    : params_(params) {
  hw::validate(params_);
  const hw::CoreArch* arch = nullptr;
  for (const hw::CoreArch& a : hw::kCoreArchs)
    if (a.core_name == chip.core_name) arch = &a;
  if (!arch)
    throw std::invalid_argument("no NeuronCore architecture for " + std::string(chip.core_name));
  peak_ = chip.core.tensor(hw::TensorEngineDType::kBF16);
  vector_eps_ = arch->partitions * arch->vector_hz;
  scalar_eps_ = arch->partitions * arch->scalar_hz;
  memory_Bps_ = CostModel(chip).memory_Bps();
}

double TrainingKernelModel::matmul_efficiency(std::int64_t m, std::int64_t n,
                                              std::int64_t k) const {
  return CostModel::tile_efficiency(m, k) * moving_efficiency(n) * params_.tensor_efficiency;
}

double TrainingKernelModel::matmul_s(std::int64_t batch, std::int64_t m, std::int64_t n,
                                     std::int64_t k) const {
  const double b = static_cast<double>(batch), M = static_cast<double>(m),
               N = static_cast<double>(n), K = static_cast<double>(k);
  const double tensor = 2 * b * M * N * K / (peak_ * matmul_efficiency(m, n, k));
  const double dma = 2 * b * (M * K + K * N + M * N) / memory_Bps_;
  return params_.kernel_overhead_s + std::max(tensor, dma);
}

double TrainingKernelModel::elementwise_s(double vector, double scalar, double bytes) const {
  return params_.kernel_overhead_s +
         std::max({vector / vector_eps_, scalar / scalar_eps_, bytes / memory_Bps_});
}

}  // namespace vtrn::cost
