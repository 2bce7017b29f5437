// The CPU fallback: any op without a native `neuron` kernel, and any call a lowered kernel does
// not support, runs PyTorch's CPU kernel on CPU views of the device bytes (cpu_call.h), so the
// CPU's checks, errors, result dtypes and in-place semantics are the device's.
//
// Promises:
//  * Tensors on two devices raise PyTorch's same-device error, as on CUDA (device_check.h); a
//    foreach op whose lists span devices runs index by index instead, as CUDA's does.
//  * The fallback then waits for the queued work that produces its inputs, counts the call in
//    the eager metrics, and records the op as a fallback (warning once per op).
//  * float64 (complex128) is computed as float32 (complex64) and stored back as float64
//    (complex128), as Trainium does, with a one-time warning. The dtypes of the results are
//    the CPU's for the real dtypes. float64 results of narrower inputs (a promotion to the
//    default dtype) are rounded to float32 precision.
//  * VTRN_FALLBACK=error makes it raise NotImplementedError naming the op instead.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace vtrn::torch_adapter {

/// Runs |op| with the arguments on |stack| on the CPU, leaving its returns there.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace vtrn::torch_adapter
