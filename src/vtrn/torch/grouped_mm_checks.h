// The checks torch._grouped_mm makes on `neuron` before its lowering runs
// (grouped_mm_checks.cpp).
#pragma once

#include <cstddef>

#include <ATen/core/stack.h>

namespace vtrn::torch_adapter {

/// Raises what PyTorch's _grouped_mm raises for the call on the stack (its arguments from
/// |first|): the CPU composite's input checks, strides included ("strides should be multiple of
/// 16 bytes", "Invalid strides/sizes, ..."), as its CPU and CUDA kernels do. With
/// TORCH_NEURONX_ATEN_GMM_ALIGN set to a positive N, a call with 2-d A also takes TorchNeuron's
/// alignment rule: A's row count (2-d x 3-d) or K (2-d x 2-d) and every offset divisible by N,
/// offsets sorted and within [0, that size]; reading the offsets waits for the stream.
void check_grouped_mm(const torch::jit::Stack& stack, std::size_t first);

}  // namespace vtrn::torch_adapter
