// Boolean-mask indexing on `neuron`: the rewrite the lowered index and index_put_ kernels apply
// to their indices before they lower (mask_kernels.cpp).
#pragma once

#include <cstddef>

#include <ATen/core/stack.h>

namespace vtrn::torch_adapter {

/// Replaces each boolean mask in the indices argument (stack[|self_pos| + 1], after self) with
/// one int64 index tensor per mask dimension, the columns of its nonzero() (which reads the
/// count back from the device), as ATen's expandTensors does. Returns false and leaves the
/// stack alone when there is no mask, when a mask's shape does not match self's (the CPU kernel
/// then raises its IndexError), or, for index_put_ (|put|), when one mask takes one value (the
/// lowering selects without counting).
bool expand_boolean_indices(torch::jit::Stack& stack, std::size_t self_pos, bool put);

}  // namespace vtrn::torch_adapter
