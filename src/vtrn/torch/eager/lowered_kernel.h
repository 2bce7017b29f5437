// The kernel of every lowered ATen op on `neuron`: one boxed kernel per lowering entry, shared
// by every overload call of that op.
//
// Promises:
//  * A call is described by a cheap signature (signature_cache.h); a repeat call finds its
//    executable in memory without building, printing or hashing HLO, and without Python.
//  * A first call lowers the op to a one-op StableHLO module and takes the executable from the
//    compile cache (memory, disk under TORCH_NEURONX_NEFF_CACHE_DIR, else compiled and stored).
//  * Outputs are allocated through the device allocator (functional ops), resized (out=) or
//    checked (in-place); the executable is queued on the current stream (launch.h), or held
//    for fusion (pending_group.h). Non-contiguous inputs are packed on the stream first.
//  * A call the lowering does not support (an unclaimed dtype, an argument value it does not
//    implement) runs through the CPU fallback, and so does a call with an empty input (the CPU
//    kernels define those edge cases). VTRN_EAGER_DEBUG=1 prints why, once per signature.
#pragma once

#include <torch/library.h>

#include "vtrn/torch/lowering/lowering.h"

namespace vtrn::torch_adapter::eager {

/// The boxed kernel that runs |entry|'s op. |entry| must outlive the kernel (registry entries
/// live until exit).
torch::CppFunction lowered_kernel(const lowering::OpLowering& entry);

}  // namespace vtrn::torch_adapter::eager
