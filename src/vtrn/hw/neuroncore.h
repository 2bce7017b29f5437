// NeuronCore figures the kernel cost model needs beyond the chip specs (chip.h, specs.cc).
// Header-only; each value cites its source (see ../shared/research/trainium-hardware.md).
#pragma once

namespace vtrn::hw {

/// The Tensor engine is a 128x128 systolic array: the stationary operand occupies up to 128
/// partitions (contraction) x 128 columns. SDK about-neuron/arch/neuron-hardware/neuron-core-v3.rst
/// ("128x128 systolic array"); nki/guides/architecture/trainium_inferentia2_arch.rst ("stationary
/// 128x128"). Same on NeuronCore-v2 and -v4.
inline constexpr int kTensorArrayRows = 128;
inline constexpr int kTensorArrayCols = 128;

}  // namespace vtrn::hw
