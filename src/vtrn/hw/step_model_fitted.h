// Written by bench/calibrate.py: the step model's fitted parameters and their provenance.
// Edit by rerunning `python bench/calibrate.py --write`, not by hand.
#pragma once

namespace vtrn::hw::fitted {

// BEGIN FITTED
inline constexpr double kTensorEfficiency = 0.495;
inline constexpr double kKernelOverheadS = 1.3e-06;
inline constexpr double kCommOverlap = 0;
inline constexpr double kErrorBand = 0.13;
inline constexpr const char* kProvenance =
    "bench/calibrate.py 2026-12-01: fitted to 4 published trn1 runs (Neuron SDK trn1 training "
    "performance table); mean fit error 5.0%, leave-one-out mean 6.8%, worst 12.6%; fitted: "
    "tensor_efficiency; held: kernel_overhead_s (one DMA transfer's fixed cost (NKI DMA "
    "bandwidth guide)), comm_overlap (no hiding of TP / pipeline collectives)";
// END FITTED

}  // namespace vtrn::hw::fitted
