// The signature cache: what a call of a lowered op resolved to, found again without building,
// printing or hashing HLO, and without Python.
//
// Promises:
//  * A call's signature is cheap to build: the lowering, the default dtype, and per argument its
//    slot's words (a tensor's dtype and sizes, a Scalar's kind, static arguments' values, string
//    characters).
//    Two calls with the same signature lower to the same module, so they share a CompiledOp.
//  * describe_call() refuses (returns false) a call that cannot run on the device: a tensor on
//    another device or of an unsupported dtype, a non-0-d CPU tensor, an argument lowerings
//    do not take. The fallback then raises PyTorch's own error or computes the op on the CPU.
//  * The cache is thread safe and lives until exit; an entry never changes once inserted.
#pragma once

#include <cstddef>
#include <memory>

#include <ATen/core/stack.h>
#include <c10/core/Device.h>

#include "vtrn/torch/eager/compiled_op.h"
#include "vtrn/torch/eager/schema.h"
#include "vtrn/torch/eager/word_key.h"

namespace vtrn::torch_adapter::eager {

/// Appends the signature of the |info.num_args| arguments at |first| on |stack| to |key|, and
/// sets |device| (the device of the call's tensors) and |empty_input| (a tensor input has no
/// elements). False when the call cannot run here.
bool describe_call(const SchemaInfo& info, torch::jit::Stack* stack, size_t first, WordKey& key,
                   c10::DeviceIndex& device, bool& empty_input);

/// What |key| resolved to before, or null.
std::shared_ptr<const CompiledOp> find_compiled(const WordKey& key);

/// Remembers what |key| resolves to and returns the entry: the first insert of a key wins, and
/// a thread that lost the race must use the winner, so that every CompiledOp a call runs lives
/// until exit (AEE keys its composed executables by CompiledOp identity).
std::shared_ptr<const CompiledOp> insert_compiled(const WordKey& key,
                                                  std::shared_ptr<const CompiledOp> compiled);

}  // namespace vtrn::torch_adapter::eager
