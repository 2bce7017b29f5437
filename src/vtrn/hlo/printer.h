// Writes a module as StableHLO MLIR text: `module { func.func @main(...) { ... } }`.
// Elementwise ops use the pretty form (`%2 = stablehlo.add %0, %1 : tensor<4xf32>`), every other
// op the generic form (`"stablehlo.dot_general"(...) {...} : (...) -> ...`), which MLIR and
// stablehlo-opt accept. The output parses back (parser.h) to the same module and prints the
// same text again.
#pragma once

#include <string>

#include "vtrn/hlo/ir.h"

namespace vtrn::hlo {

std::string print_module(const Module& module);
/// The text of one dense literal: `dense<[1.0, 2.0]>` (without the type).
std::string print_dense(const Literal& literal);

}  // namespace vtrn::hlo
