// How the eager kernel reads an op's schema: each argument's slot (what it becomes in the
// signature, the OpCall and the launch), which arguments the op writes, and which argument
// each return aliases.
//
// Promises:
//  * classify() runs once per op (the kernel caches its SchemaInfo), never per call.
//  * A Scalar the lowering bakes in (OpLowering::static_scalars) is kStaticScalar, one the CPU
//    converts with a range check (OpLowering::checked_scalars) kCheckedScalar, a float it
//    takes at runtime (OpLowering::runtime_floats) is kRuntimeFloat; every other argument's
//    slot follows from its type alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <ATen/core/function_schema.h>

#include "vtrn/torch/lowering/lowering.h"

namespace vtrn::torch_adapter::eager {

enum class Slot : uint8_t {
  kTensor,              // Tensor / Tensor?: an input (also an output when mutable)
  kTensorList,          // Tensor[]
  kOptionalTensorList,  // Tensor?[]: the lowering sees the present elements and which they are
  kScalarList,          // Scalar[]: one runtime parameter per element
  kScalar,              // Scalar / Scalar?: runtime parameter unless static
  kStaticScalar,        // Scalar the entry bakes in
  kCheckedScalar,       // runtime Scalar whose signature also says which dtypes its value fits
  kRuntimeFloat,        // float the entry passes at runtime
  kInt,                 // int / SymInt (optional)
  kInts,                // int[] / SymInt[] (optional)
  kBools,               // bool[N]: a static list, read as ints 0/1 (output masks)
  kFloat,               // float (optional)
  kBool,
  kString,
  kDType,
  kIgnoredIfNone,  // layout, device, memory_format, generator...: must be None
  kOut,            // out= tensor (write only)
  kOutList,        // out= tensor list
};

struct SchemaInfo {
  std::vector<Slot> slots;
  std::vector<bool> mutable_input;  // per argument: a positional argument the op writes
  size_t num_args = 0;
  size_t num_returns = 0;
  std::vector<int> return_alias;         // per return: the argument it aliases, or -1
  bool returns_list = false;             // one Tensor[] return (functional foreach ops)
  bool complex_pairs = false;            // complex64 tensors go to the lowering as float32 pairs
  bool reads_stored_transposed = false;  // OpLowering::reads_stored_transposed
};

/// The slots of |schema|'s arguments and the aliasing of its returns, for lowering |entry|.
SchemaInfo classify(const c10::FunctionSchema& schema, const lowering::OpLowering& entry);

}  // namespace vtrn::torch_adapter::eager
