// Export of a captured graph as one StableHLO module (vtrn.compile.export_stablehlo): while
// recording, each group the graph capture runs is kept; export_recorded() then writes the
// module whose parameters are the program's input tensors and whose results are its outputs.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vtrn::torch_adapter {

/// Starts keeping every group that runs (call before the graph capture begins).
void start_export_recording();

/// Stops recording and returns the StableHLO text of the recorded group, its parameters being
/// |inputs| in order (a view of an input is computed from it; an inline scalar becomes a
/// constant) and its results |outputs| in order. Throws std::runtime_error when the graph did
/// not run as exactly one group of lowered ops, or when it reads or returns a tensor that is
/// neither an input nor computed by the group.
std::string finish_export_recording(const std::vector<at::Tensor>& inputs,
                                    const std::vector<at::Tensor>& outputs);

}  // namespace vtrn::torch_adapter
