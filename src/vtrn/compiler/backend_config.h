// Reading the "key=value;..." backend_config strings of vtrn's own custom calls.
#pragma once

#include <optional>
#include <string_view>

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

}  // namespace vtrn::compiler
