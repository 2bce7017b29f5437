#include "vtrn/compiler/collective_call.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace vtrn::compiler {
namespace {

void check_name(const std::string& field, const std::string& value) {
  if (value.empty()) throw std::invalid_argument("collective custom_call: empty " + field);
  for (char c : value) {
    if (c == ';' || c == '=' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      throw std::invalid_argument("collective custom_call: " + field + " \"" + value +
                                  "\" holds a character the backend_config cannot carry");
  }
}

}  // namespace

std::string collective_backend_config(const CollectiveCall& call) {
  check_name("kind", call.kind);
  check_name("reduce op", call.reduce);
  check_name("group name", call.group);
  char seconds[40];
  std::snprintf(seconds, sizeof seconds, "%.9e", call.seconds);
  return "kind=" + call.kind + ";reduce=" + call.reduce + ";group=" + call.group +
         ";size=" + std::to_string(call.size) + ";seconds=" + seconds;
}

std::optional<CollectiveCall> parse_collective_config(std::string_view config) {
  std::map<std::string, std::string, std::less<>> fields;
  while (!config.empty()) {
    const std::size_t end = config.find(';');
    const std::string_view item = config.substr(0, end);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    fields[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    config = end == std::string_view::npos ? std::string_view() : config.substr(end + 1);
  }
  for (const char* f : {"kind", "reduce", "group", "size", "seconds"})
    if (!fields.count(f) || fields[f].empty()) return std::nullopt;
  CollectiveCall c;
  c.kind = fields["kind"];
  if (c.kind != "all_gather" && c.kind != "reduce_scatter" && c.kind != "all_reduce")
    return std::nullopt;
  c.reduce = fields["reduce"];
  c.group = fields["group"];
  const std::string& size = fields["size"];
  auto [p, ec] = std::from_chars(size.data(), size.data() + size.size(), c.size);
  if (ec != std::errc() || p != size.data() + size.size() || c.size < 1) return std::nullopt;
  char* tail = nullptr;
  c.seconds = std::strtod(fields["seconds"].c_str(), &tail);
  if (*tail != '\0' || !std::isfinite(c.seconds) || c.seconds < 0) return std::nullopt;
  return c;
}

}  // namespace vtrn::compiler
