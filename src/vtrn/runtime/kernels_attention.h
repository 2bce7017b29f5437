// Internal to the executor: the host implementations of the attention kernels
// (compiler/fused_attention.h, compiler/attention_through_memory.h), registered for their
// custom_call targets.
#pragma once

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::kernels {

/// (query, key, value) -> (output, saved probabilities and logsumexp), in float32 with both
/// rounded to their dtype; the causal mask's hidden keys are never multiplied. With ATen's
/// kernels installed, the output and logsumexp are ATen's and the probabilities NaN.
void attention_forward(const CustomCallArgs& args);
/// (grad_output, query, key, value, saved, output) -> (grad_query, grad_key, grad_value), in
/// float32 with each rounded to its dtype; the keys whose probabilities the causal mask zeroed
/// are never multiplied. With ATen's flash backward installed, its gradients from the saved
/// logsumexp.
void attention_backward(const CustomCallArgs& args);
/// (query, key, value) -> (output, logsumexp), in float32 with the output rounded to its dtype.
void flash_attention_forward(const CustomCallArgs& args);
/// (grad_output, query, key, value, output, logsumexp) -> (grad_query, grad_key, grad_value),
/// the probabilities recomputed from the logsumexp, as the flash backward does.
void flash_attention_backward(const CustomCallArgs& args);

}  // namespace vtrn::runtime::kernels
