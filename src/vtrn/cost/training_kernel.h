// The time of one kernel of a training step, as the planner's step model prices it.
//
// Where kernel_cost.h gives a kernel's time at the engines' peaks, this adds what a compiled
// training graph spends on top, with the calibrated parameters of hw::StepModel:
//   * Tensor engine: 2 b m n k FLOPs at the bf16 peak x efficiency, where
//       efficiency = fill(k, 128) x fill(m, 128) x moving(n) x tensor_efficiency
//     fill(x, t) = x / (t ceil(x / t)) is the tile padding of the 128 x 128 stationary array, and
//     moving(n) = N / max(N, 64) with N = n / ceil(n / 512): the moving operand streams in
//     pieces of at most 512 columns (one PSUM bank of fp32), each costing at least
//     MM_INIT_LATENCY = 64 cycles.
//   * Vector and Scalar engines: element passes at one element per lane per cycle on 128 lanes
//     (an instruction costs max(MIN_II, N) cycles for N elements per partition).
//   * DMA: the kernel's HBM bytes at the core's memory bandwidth (memory-bound ops).
//   * Each kernel costs the fixed kernel_overhead_s on top of its slowest engine.
#pragma once

#include <cstdint>

#include "vtrn/cost/kernel_cost.h"
#include "vtrn/hw/neuroncore.h"
#include "vtrn/hw/step_model.h"

namespace vtrn::cost {

/// Fraction of the moving operand's issue cycles that carry data: N / max(N, 64) with
/// N = n / ceil(n / 512).
double moving_efficiency(std::int64_t n);

class TrainingKernelModel {
 public:
  /// The kernels of one physical NeuronCore of |chip| under |params|.
  TrainingKernelModel(const hw::ChipSpec& chip, const hw::StepModel& params);

  /// A bf16 contraction batch x (m x k) . (k x n) with its operands' and result's HBM traffic.
  double matmul_s(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k) const;
  /// Tensor-engine efficiency of the contraction's shape (tile padding, moving pieces and the
  /// calibrated sustained fraction).
  double matmul_efficiency(std::int64_t m, std::int64_t n, std::int64_t k) const;
  /// An elementwise / reduction kernel: |vector| element passes on the Vector engine, |scalar|
  /// on the Scalar engine (transcendentals), |bytes| of HBM traffic.
  double elementwise_s(double vector, double scalar, double bytes) const;
  /// Elements per second one engine pass processes: 128 lanes x the engine clock.
  double vector_elements_per_s() const { return vector_eps_; }
  double scalar_elements_per_s() const { return scalar_eps_; }
  double tensor_peak() const { return peak_; }
  double memory_Bps() const { return memory_Bps_; }
  const hw::StepModel& params() const { return params_; }

 private:
  hw::StepModel params_;
  double peak_, vector_eps_, scalar_eps_, memory_Bps_;
};

}  // namespace vtrn::cost
