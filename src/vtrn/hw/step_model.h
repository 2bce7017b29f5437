// The parameters of the planner's step model that no data sheet gives: how much of the
// Tensor-engine peak compiled training graphs sustain, the fixed cost of each kernel, how much
// collective time hides behind compute, and the model's error band. Each has a physical meaning
// and bounds; their values are fitted by bench/calibrate.py to the published trn1 training runs
// and written into step_model_fitted.h with their provenance. docs/planner.md explains each.
#pragma once

#include <string_view>

namespace vtrn::hw {

struct StepModel {
  /// Fraction of the Tensor-engine peak a full-tile bf16 matmul sustains inside a training graph
  /// (weight loads, PSUM evacuation, DMA waits the tile-shape model does not see). (0, 1].
  double tensor_efficiency = 1;
  /// Fixed cost of one kernel (instruction issue, semaphore waits, DMA descriptor setup), in
  /// seconds, paid by every kernel of the step whatever its size. > 0.
  double kernel_overhead_s = 0;
  /// Fraction of the TP and pipeline collectives' time hidden behind compute (they sit between
  /// dependent kernels; FSDP's and the replicas' overlap follows from prefetch and the backward
  /// they hide behind). [0, 1).
  double comm_overlap = 0;
  /// Relative error band of a predicted step time: the calibration's largest leave-one-out
  /// error (a prediction t stands for t x (1 +- band)).
  double error_band = 0;
  std::string_view provenance;  ///< where the values come from
};

/// The calibrated parameters (step_model_fitted.h), used for every chip: the same compiler and
/// runtime drive Trainium, Trainium2 and Trainium3 (docs/planner.md says why they transfer).
const StepModel& calibrated_step_model();

/// Bounds a StepModel must satisfy; throws std::invalid_argument naming the parameter, its value
/// and its range.
void validate(const StepModel& model);

}  // namespace vtrn::hw
