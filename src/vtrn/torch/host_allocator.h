// Pinned host memory for `neuron`: page-locked on real hardware; here ordinary host memory that
// is remembered, so is_pinned() and non-blocking copies can tell it apart.
//
// Promises:
//  * Blocks come from the CPU allocator and are CPU memory to PyTorch.
//  * is_pinned() is true for any address inside a live pinned block, false once it is freed.
#pragma once

#include <c10/core/Allocator.h>

namespace vtrn::torch_adapter {

/// The allocator PrivateUse1 hooks hand out for pin_memory(). Lives until exit.
c10::Allocator& pinned_allocator();

/// Whether |ptr| points into a live block of pinned_allocator().
bool is_pinned(const void* ptr);

}  // namespace vtrn::torch_adapter
