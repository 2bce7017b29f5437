// What an eager call's signature resolves to: the executable of its one-op module, or the reason
// the call runs through the CPU fallback.
//
// Promises: a CompiledOp never changes once it is in the signature cache; queued work and AEE
// groups hold it by shared_ptr.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vtrn/hlo/ir.h"
#include "vtrn/runtime/compile_cache.h"
#include "vtrn/torch/eager/alias_safety.h"
#include "vtrn/torch/lowering/lowering.h"

namespace vtrn::torch_adapter::eager {

struct CompiledOp {
  const lowering::OpLowering* entry = nullptr;
  std::shared_ptr<const runtime::LoadedExecutable> executable;  // null: fall back
  std::shared_ptr<const hlo::Module> module;                    // the one-op module (for AEE)
  std::vector<hlo::TensorType> output_types;                    // written outputs, in order
  std::vector<bool> written;                                    // per output of the call
  std::vector<bool> complex;  // per written output: a complex64 tensor, as float32 pairs
  AliasSafety aliasing;
  double modeled_seconds = 0;
  std::string fallback_reason;
};

}  // namespace vtrn::torch_adapter::eager
