// The CHLO ops that JAX and torch-mlir emit, decomposed into StableHLO ops as they are parsed,
// the way XLA's chlo-legalize-to-stablehlo pass does: `chlo.erf` becomes Eigen's rational
// approximation, `chlo.top_k` a descending sort and a slice, and so on. `stablehlo.tan` (a
// newer StableHLO op) is decomposed here too, and Shardy's placement hints
// (`sdy.sharding_constraint`, `sdy.reshard`) become their operand: one device needs no sharding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vtrn/hlo/ir.h"

namespace vtrn::hlo {

/// A decomposable op as read: its full name ("chlo.erf"), operand values and the `k` of top_k.
struct ChloOp {
  std::string name;
  std::vector<int> operands;
  std::int64_t k = -1;
};

/// Whether |name| ("chlo.erf", "stablehlo.tan") is decomposed by decompose_chlo.
bool is_decomposable(std::string_view name);
/// The names decompose_chlo takes, comma-separated, for messages.
std::string decomposable_names();

/// Appends StableHLO ops computing |op| to |block| (each verified) and returns the values that
/// stand for its results. Throws hlo::Error naming the op for an unknown op, a wrong operand
/// count or a dtype the decomposition does not take.
std::vector<int> decompose_chlo(const ChloOp& op, Block& block);

}  // namespace vtrn::hlo
