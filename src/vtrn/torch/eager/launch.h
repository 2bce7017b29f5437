// One executable run on a stream, with the buffers it reads and writes.
//
// Promises:
//  * An output is written in place only when it is contiguous and, if it overlaps an input, is
//    that very input and the executable may write over it (alias safety); any other output is
//    written to a staging buffer and copied into place, so overlapping views read what they
//    held before the launch.
//  * Non-contiguous inputs are packed on the stream's worker when the launch runs, not when it
//    is queued.
#pragma once

#include <memory>
#include <vector>

#include <c10/core/Device.h>

#include "vtrn/runtime/compile_cache.h"
#include "vtrn/torch/eager/alias_safety.h"
#include "vtrn/torch/eager/buffer_ref.h"

namespace vtrn::torch_adapter::eager {

/// One executable run with its buffers; |outputs| are written in the executable's result order.
struct Launch {
  std::shared_ptr<const runtime::LoadedExecutable> executable;
  std::vector<BufferRef> inputs, outputs;
  std::vector<bool> staged;  // per output: written through a staging buffer
  bool run = true;           // false in compile-only mode: outputs get sentinels instead

  /// Decides, for each output, whether it is written in place or through a staging buffer.
  void plan_outputs(const AliasSafety& aliasing);

  /// Runs the executable on the buffers (on a stream's worker): packs non-contiguous inputs and
  /// copies staged outputs into place. When |run| is false it only fills the outputs with
  /// compile-only mode's sentinels: NaN in floating and complex outputs, 4 in the others (as
  /// the NKI simulator fills new allocations).
  void execute() const;
};

/// Queues |launch| on the current stream of |device|; |name| must be a string literal.
void enqueue_launch(c10::DeviceIndex device, const char* name, Launch launch);

/// Tensor-engine FLOPs (the cost model's 2*b*m*n*k) of every executable launched so far, in
/// this process: the model FLOPs `vtrn estimate` reports.
double launched_tensor_flops();

}  // namespace vtrn::torch_adapter::eager
