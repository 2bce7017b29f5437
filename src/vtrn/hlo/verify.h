// Verifier and shape inference. Each check names the op, the operand and what was expected:
//   "stablehlo.add: operand 1 has type tensor<3xf32>, expected tensor<4xf32> (the type of operand
//   0)"
#pragma once

#include <vector>

#include "vtrn/hlo/ir.h"

namespace vtrn::hlo {

/// The result types of |op| given its operand types. For ops whose results are not implied by
/// their operands and attributes (reshape, convert, iota, broadcast_in_dim, custom_call,
/// rng_bit_generator, dot_general's element type), |declared| supplies them and is checked.
/// When |declared| is given for other ops it must match the inferred types.
/// Throws hlo::Error naming the op, the operand and what was expected.
std::vector<TensorType> infer_result_types(const Op& op, const std::vector<TensorType>& operands,
                                           const std::vector<TensorType>* declared);

/// Checks |op| as it sits in |block| (operand numbers defined, result types as inferred,
/// regions well formed).
void verify_op(const Block& block, const Op& op);

/// Checks a whole block: values defined before use, every op, the results.
void verify_block(const Block& block);
void verify_module(const Module& module);

}  // namespace vtrn::hlo
