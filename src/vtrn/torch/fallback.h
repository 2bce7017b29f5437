// The CPU fallback: any op without a native `neuron` kernel, and any call a lowered kernel does
// not support, runs PyTorch's CPU kernel on CPU views of the device bytes.
//
// Promises:
//  * The fallback first waits for the queued work that produces its inputs, counts the call in
//    the eager metrics, and records the op as a fallback (warning once per op).
//  * float64 is computed as float32 and stored back as float64, as Trainium does, with a
//    one-time warning.
//  * VTRN_FALLBACK=error makes it raise NotImplementedError naming the op instead.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace vtrn::torch_adapter {

/// Runs |op| with the arguments on |stack| on the CPU, leaving its returns there.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace vtrn::torch_adapter
