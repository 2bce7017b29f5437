// Where an eager call runs over its tensors in the order they lie in memory rather than in
// row-major order of their sizes, so that its result is the CPU's: the CPU's TensorIterator
// loops over a strided tensor in memory order, which for a reduction is the order its sums add
// in. Each function returns the permutation of the dims (outermost in memory first) that makes
// the call's tensors dense views, or an empty one where the call takes the ordinary path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>
#include <ATen/core/stack.h>
#include <c10/util/SmallVector.h>

#include "vtrn/torch/eager/schema.h"

namespace vtrn::torch_adapter::eager {

using Permutation = c10::SmallVector<int64_t, 6>;

/// The dims of |t| from the outermost in memory to the innermost when |t| is laid out densely
/// in another order than row-major; empty otherwise, and where a size below 2 makes the order
/// ambiguous.
Permutation dense_storage_order(const at::Tensor& t);

/// For an elementwise call: the storage order of its largest tensor argument (|full|), when
/// every tensor argument has its sizes and strides or, read-only, broadcasts against it (a
/// rotary table [seq, d] times a transposed [b, h, seq, d]; |broadcasts| says whether one does).
/// 0-d tensors (scalars) are left out; a list argument takes the ordinary path.
Permutation elementwise_storage_order(const SchemaInfo& info, const torch::jit::Stack& stack,
                                      size_t first, const at::Tensor*& full, bool& broadcasts);

/// For sum or mean of |t| over |dims| (nullopt or empty: all): the storage order of |t|, when its
/// kept dims lie in memory in their own order. Then the CPU's sum over the strided |t| is its
/// sum over the dense permuted view (the reduced dims innermost in the CPU's loop, ordered by
/// their strides), which is what the device computes; checked against torch 2.13 on 2,000
/// random layouts, which also showed that kept dims in another order loop otherwise.
Permutation reduction_storage_order(const at::Tensor& t, std::optional<c10::IntArrayRef> dims);

/// Whether sorting |t| along |dim| sorts an expanded line (stride 0, two or more elements): the
/// CPU's sort then returns the indices in order without sorting, and std::sort, which the
/// device's unstable sort is, moves equal keys. Such a call is the CPU kernel's.
bool sorts_an_expanded_line(const at::Tensor& t, int64_t dim);

}  // namespace vtrn::torch_adapter::eager
