// The price of a custom call that stands for a module of ops (compiler/attention_through_memory.h,
// compiler/aten_conv2d.h): the host runs the call its own way, the modeled Trainium time is the
// ops'.
#pragma once

#include "vtrn/cost/kernel_cost.h"
#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

/// The kernels |module| compiles to with default options, summed into one: FLOPs, each
/// engine's time and the total time added, bound by the engine that bounds most of that time.
cost::KernelCost cost_as_ops(const hlo::Module& module, const cost::CostModel& model);

}  // namespace vtrn::compiler
