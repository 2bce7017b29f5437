// Reading the "key=value;..." backend_config strings of vtrn's own custom calls, and naming a
// call's operand and result types in their errors.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

/// Reads "<key>0" or "<key>1" at the front of |text| and drops it; nullopt (|text| unchanged)
/// when |text| does not start so.
inline std::optional<bool> take_flag(std::string_view& text, std::string_view key) {
  if (text.substr(0, key.size()) != key || text.size() < key.size() + 1) return std::nullopt;
  const char c = text[key.size()];
  if (c != '0' && c != '1') return std::nullopt;
  text.remove_prefix(key.size() + 1);
  return c == '1';
}

/// Reads "<key><number>;" at the front of |text| and drops "<key><number>" (the ';' stays);
/// nullopt (|text| unchanged) when |text| does not start so.
inline std::optional<double> take_number(std::string_view& text, std::string_view key) {
  if (text.substr(0, key.size()) != key) return std::nullopt;
  const std::size_t end_of_number = text.find(';', key.size());
  if (end_of_number == key.size() || end_of_number == std::string_view::npos) return std::nullopt;
  const std::string number(text.substr(key.size(), end_of_number - key.size()));
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size()) return std::nullopt;
  text.remove_prefix(end_of_number);
  return value;
}

/// "(<operand types>) -> (<result types>)" of |op|, for an error about them.
inline std::string call_types(const hlo::Block& b, const hlo::Op& op) {
  std::string text = "(";
  for (std::size_t i = 0; i < op.operands.size(); ++i)
    text += (i ? ", " : "") + b.type(op.operands[i]).str();
  text += ") -> (";
  for (std::size_t i = 0; i < op.results.size(); ++i)
    text += (i ? ", " : "") + b.type(op.results[i]).str();
  return text + ")";
}

}  // namespace vtrn::compiler
