// Reads StableHLO MLIR text into a verified Module: the text print_module writes, and the text
// other frameworks export (jax.jit(f).lower(...).as_text(), pretty or generic form). Attributes
// vtrn does not need (shardings, locations, result_info, precision) are skipped; calls to other
// functions of the module are inlined. Errors name the line and column, quote the line, and say
// what was expected; an op outside the subset is named:
//   line 3, column 10: op 'stablehlo.while' is not supported by vtrn
#pragma once

#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::hlo {

class ParseError : public Error {
 public:
  ParseError(const std::string& msg, int line, int column)
      : Error(msg), line_(line), column_(column) {}
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_, column_;
};

/// Parses and verifies |text|. Throws ParseError (for any problem, verifier errors included).
Module parse_module(std::string_view text);

}  // namespace vtrn::hlo
