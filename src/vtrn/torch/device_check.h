// The same-device rule of an op's tensor arguments on `neuron`, as PyTorch applies it on CUDA.
//
// Promises:
//  * check_same_device() raises PyTorch's own RuntimeError, "Expected all tensors to be on the
//    same device, but found at least two devices, neuron:0 and neuron:1!", when the tensors of
//    an aten op (inputs, outputs, list elements) are on more than one device. The first device
//    named is TensorIterator's common device: the first non-CPU one, outputs first.
//  * A 0-d CPU tensor that the op reads is a scalar, allowed with any device (as on CUDA).
//  * Ops that move data between devices or take CPU indices (copies, indexing, set_) and ops
//    outside the aten namespace are not checked.
//  * Both functions only read the stack. The fallback checks every call; the lowered kernel
//    needs no check of its own: a call whose tensors are not on one device falls back.
#pragma once

#include <cstddef>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace vtrn::torch_adapter {

/// Raises PyTorch's same-device error when the arguments of |op| at |first| on |stack| are not
/// all on one device (0-d CPU inputs aside). Does nothing for ops that may mix devices.
void check_same_device(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t first);

/// Whether the non-CPU tensors among the |count| arguments at |first| are on more than one
/// device (a foreach op's lists may be: CUDA then runs each index on its own).
bool spans_devices(const torch::jit::Stack& stack, size_t first, size_t count);

}  // namespace vtrn::torch_adapter
