#include "vtrn/hw/step_model.h"

#include <stdexcept>
#include <string>

#include "vtrn/hw/step_model_fitted.h"

namespace vtrn::hw {

const StepModel& calibrated_step_model() {
  static const StepModel model = [] {
    StepModel m;
    m.tensor_efficiency = fitted::kTensorEfficiency;
    m.kernel_overhead_s = fitted::kKernelOverheadS;
    m.comm_overlap = fitted::kCommOverlap;
    m.error_band = fitted::kErrorBand;
    m.provenance = fitted::kProvenance;
    validate(m);
    return m;
  }();
  return model;
}

void validate(const StepModel& m) {
  auto bad = [](const char* name, double v, const char* range) {
    throw std::invalid_argument(std::string("step model parameter ") + name + " = " +
                                std::to_string(v) + " is outside " + range);
  };
  if (!(m.tensor_efficiency > 0 && m.tensor_efficiency <= 1))
    bad("tensor_efficiency", m.tensor_efficiency, "(0, 1]");
  if (!(m.kernel_overhead_s >= 0 && m.kernel_overhead_s < 1e-2))
    bad("kernel_overhead_s", m.kernel_overhead_s, "[0, 0.01) seconds");
  if (!(m.comm_overlap >= 0 && m.comm_overlap < 1)) bad("comm_overlap", m.comm_overlap, "[0, 1)");
  if (!(m.error_band >= 0 && m.error_band < 1)) bad("error_band", m.error_band, "[0, 1)");
}

}  // namespace vtrn::hw
