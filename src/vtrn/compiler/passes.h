// Module-level passes: constant folding of trivial cases, common-subexpression elimination,
// dead-code elimination. Each returns a verified module whose values are numbered canonically
// (arguments first, then op results in order), the numbering the parser produces.
#pragma once

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

/// Folds elementwise add/subtract/multiply/divide/negate/abs/maximum/minimum/convert of
/// constants (up to 4096 elements), broadcast_in_dim of a one-element constant, and reshape of
/// a constant. Floating-point folding is exact: operands are widened to double, computed and
/// rounded once to the result type, which equals the float32 result for these ops.
int fold_constants(hlo::Module& module);
/// Replaces an op by an earlier identical one (same kind, operands, attributes, types).
/// rng_bit_generator and custom_call are never merged.
int eliminate_common_subexpressions(hlo::Module& module);
/// A transpose feeding a dot_general becomes the dot's dimension numbers when the free dims
/// keep their order (x^T @ y reads x in place); returns the number of operands folded.
int fold_transposes_into_dots(hlo::Module& module);
/// Gives each elementwise (or reduce) op after the first that reads a broadcast_in_dim of a
/// one-element operand its own copy of it, placed just before the op: a broadcast shared by
/// several fused loops was otherwise materialized whole for them to read, where each loop reads
/// the scalar once. The same for an elementwise op of such broadcasts alone (a lerp's test of
/// its weight), copied with its operands: the loops of a _foreach_lerp_'s tensors of one shape,
/// all reading it, were fused into one loop over every tensor at once, which took twice the
/// time of the separate loops. Returns the number of ops copied.
int duplicate_shared_broadcasts(hlo::Module& module);
/// Gives the second of exactly two loop readers (elementwise or reduce ops) of x - b or x + b,
/// b a broadcast, its own copy of it (and of the broadcast): log_softmax's x - max feeds both
/// the exponential's sum and the result, and was written whole between them, where each loop
/// can subtract again on the rows it reads. Run before duplicate_shared_broadcasts. Returns the
/// number of ops copied.
int recompute_shared_differences(hlo::Module& module);
/// Removes ops none of whose results are used (custom_call is kept).
int eliminate_dead_code(hlo::Module& module);
/// Renumbers values canonically (see above).
void renumber(hlo::Block& block);

/// A byte string identifying an op's kind, attributes, operand numbers and types (regions
/// included); two ops with equal keys compute the same values.
std::string op_key(const hlo::Block& block, const hlo::Op& op);

}  // namespace vtrn::compiler
