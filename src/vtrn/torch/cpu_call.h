// Running an op's CPU kernel on the bytes of `neuron` tensors: device memory is host memory,
// so the CPU kernel reads and writes the device tensors themselves.
//
// Promises:
//  * Each neuron tensor argument becomes a CPU tensor over its bytes, and arguments that share a
//    device storage share one CPU storage: the CPU kernel sees their aliasing as it sees CPU
//    tensors' (its memory-overlap errors, in-place results over overlapping views).
//  * Written arguments are written in place. One the kernel resized (an out= tensor) is resized
//    on the device and receives the result.
//  * A return that aliases a written argument is that argument; one over a device storage (a
//    view) is a device tensor over it; any other is copied to the call's device.
//  * Float64Policy says what happens to float64 and complex128 (see fallback.h for why).
//  * The caller has synchronized the devices' streams.
#pragma once

#include <optional>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/ScalarType.h>

namespace vtrn::torch_adapter {

/// The dtypes of the tensors of each return, in order.
using ReturnDtypes = std::vector<std::vector<at::ScalarType>>;

struct Float64Policy {
  /// Compute float64/complex128 device tensors as float32/complex64 stand-ins (copies, shared
  /// per storage so aliasing is kept), write them back converted, and give each other return
  /// the dtype |stand_in_returns| names (the CPU's for the real dtypes). Null: no stand-ins.
  const ReturnDtypes* stand_in_returns = nullptr;
  /// Round float64/complex128 returns the op computed to float32/complex64 precision.
  bool round_results = false;
};

/// Runs |op|'s CPU kernel on its arguments (the last ones on |stack|), leaving its returns there.
void call_cpu_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                     const Float64Policy& policy);

/// Shape-only execution's fallback: runs |op|'s shape function (its Meta kernel) on stand-ins
/// of the arguments and leaves returns of those shapes on |stack| without computing them:
/// written arguments keep their memory (resized as the shape function resized them), views are
/// views of their argument, and every other return is a new, unwritten device tensor. Returns
/// false, changing nothing, when the op has no shape function or it raises; the caller then
/// runs the CPU kernel.
bool call_meta_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

/// The dtypes of |op|'s returns for the arguments on |stack|, from its shape function (its Meta
/// kernel); nullopt when it has none or it raises.
std::optional<ReturnDtypes> meta_return_dtypes(const c10::OperatorHandle& op,
                                               const torch::jit::Stack& stack);

/// The dtypes of |op|'s returns for the arguments on |stack|, from its CPU kernel run on copies
/// of the device tensors; raises the CPU's error where it refuses the call.
ReturnDtypes cpu_return_dtypes(const c10::OperatorHandle& op, const torch::jit::Stack& stack);

}  // namespace vtrn::torch_adapter
