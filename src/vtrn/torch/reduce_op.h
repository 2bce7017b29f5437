// What the `neuron` c10d backend does for each c10d::ReduceOp, on top of the transport (Gloo),
// which moves the data and reduces with SUM, PRODUCT, MIN, MAX, BAND, BOR and BXOR.
//
// The rules follow ProcessGroupNCCL, with the bitwise operations added for integer tensors:
//   SUM, PRODUCT, MIN, MAX  every dtype; SUM of bool is a logical or (MAX), as NCCL does
//   AVG                     floating and integer dtypes: SUM, then a division by the group size,
//                           rounded to the dtype (floats) or truncated toward zero (integers,
//                           NCCL's SumPostDiv); bool raises TypeError, as NCCL does
//   PREMUL_SUM              half, float, bfloat16, double: each rank multiplies its input by
//                           the factor (a double or a one-element tensor), then SUM (what
//                           TorchNeuron's backend does); other dtypes raise TypeError
//   BAND, BOR, BXOR         integer and bool dtypes; floating dtypes raise ValueError
//
// Promises: validation happens before any data moves, so a refused op leaves every tensor as
// it was. The scaling multiplies by the factor as a Python float would (`x * factor`, computed
// at float precision for half and bfloat16 and rounded once).
#pragma once

#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "vtrn/hw/instance.h"

namespace vtrn::torch_adapter {

/// A validated reduction: the op the transport runs and what happens before and after it.
struct ReducePlan {
  c10d::ReduceOp transport_op;           ///< what Gloo runs (SUM for AVG and PREMUL_SUM)
  std::optional<c10::Scalar> pre_scale;  ///< PREMUL_SUM's factor
  bool average = false;                  ///< AVG: divide the result by the group size
};

/// Checks |op| against |dtype| and plans it. |collective| names the collective in errors
/// ("all_reduce"). Throws c10::TypeError / c10::ValueError as ProcessGroupNCCL does.
ReducePlan plan_reduce(const c10d::ReduceOp& op, at::ScalarType dtype, const char* collective);

/// PREMUL_SUM's factor applied to CPU views of the inputs, in place.
void apply_pre_scale(const ReducePlan& plan, std::vector<at::Tensor>& cpu_tensors);

/// AVG's division of CPU views of the results by |group_size|, in place.
void apply_average(const ReducePlan& plan, std::vector<at::Tensor>& cpu_tensors, int group_size);

/// Modeled seconds of the elementwise passes |plan| adds on one logical core (PREMUL_SUM's
/// scaling of |input_elements| elements, AVG's division of |output_elements|), from the cost
/// model of |instance|'s chip at |lnc|; 0 for the ops the collective engine reduces itself.
double modeled_reduce_op_seconds(const ReducePlan& plan, const hw::InstanceSpec& instance, int lnc,
                                 at::ScalarType dtype, int64_t input_elements,
                                 int64_t output_elements);

}  // namespace vtrn::torch_adapter
