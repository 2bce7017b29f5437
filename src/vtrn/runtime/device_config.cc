#include "vtrn/runtime/device_config.h"

#include <cstdlib>
#include <set>
#include <sstream>
#include <stdexcept>

#include "vtrn/hw/hbm_banks.h"

namespace vtrn::runtime {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

/// A non-negative integer, or nullopt if |text| is anything else.
std::optional<long long> parse_count(const std::string& text) {
  const std::string t = trim(text);
  if (t.empty() || t.size() > 18) return std::nullopt;
  for (char c : t) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::stoll(t);
}

[[noreturn]] void bad_core_list(const char* what, const std::string& text, int cores,
                                const std::string& why) {
  std::ostringstream msg;
  msg << what << "='" << text << "' " << why << "; this instance has logical cores 0-" << cores - 1
      << ". Use an index (\"5\"), an inclusive range (\"4-7\") or a comma list of them "
         "(\"0-3,8\").";
  throw std::invalid_argument(msg.str());
}

}  // namespace

std::string DeviceConfig::describe() const {
  std::string s(instance->name);
  if (lnc > 0) s += ", LNC" + std::to_string(lnc);
  return s;
}

EnvLookup process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::vector<int> parse_core_list(const std::string& text, int cores, const char* what) {
  std::vector<int> out;
  std::set<int> seen;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto dash = item.find('-');
    const auto first = parse_count(dash == std::string::npos ? item : item.substr(0, dash));
    const auto last = dash == std::string::npos ? first : parse_count(item.substr(dash + 1));
    if (!first || !last) bad_core_list(what, text, cores, "is not a core list");
    if (*last < *first) bad_core_list(what, text, cores, "has a range that ends before it starts");
    if (*last >= cores) {
      bad_core_list(what, text, cores,
                    "names core " + std::to_string(*last) + ", which does not exist");
    }
    for (long long c = *first; c <= *last; ++c) {
      if (!seen.insert(static_cast<int>(c)).second) {
        bad_core_list(what, text, cores, "names core " + std::to_string(c) + " twice");
      }
      out.push_back(static_cast<int>(c));
    }
  }
  if (out.empty()) bad_core_list(what, text, cores, "names no core");
  return out;
}

DeviceConfig device_config_from_env(const EnvLookup& env) {
  DeviceConfig config;
  const std::string instance = env("NEURON_RT_FAKE_INSTANCE_TYPE").value_or("trn2.48xlarge");
  try {
    config.instance = &hw::find_instance(instance);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("NEURON_RT_FAKE_INSTANCE_TYPE='" + instance + "': " + e.what());
  }
  const hw::InstanceSpec& spec = *config.instance;

  int requested_lnc = 0;
  if (const auto lnc = env("NEURON_LOGICAL_NC_CONFIG"); lnc && !trim(*lnc).empty()) {
    const auto value = parse_count(*lnc);
    if (!value || *value > 8) {
      throw std::invalid_argument("NEURON_LOGICAL_NC_CONFIG='" + *lnc +
                                  "' is not a logical NeuronCore setting; use 1 or 2.");
    }
    requested_lnc = static_cast<int>(*value);
  }
  try {
    config.lnc = hw::resolve_lnc(spec, requested_lnc);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("NEURON_LOGICAL_NC_CONFIG=" + std::to_string(requested_lnc) + ": " +
                                e.what());
  }
  const int ranks_per_chip = spec.ranks_per_chip(config.lnc);
  config.cores_per_node = spec.chips * ranks_per_chip;

  if (const auto visible = env("NEURON_RT_VISIBLE_CORES"); visible && !trim(*visible).empty()) {
    config.visible_cores =
        parse_core_list(*visible, config.cores_per_node, "NEURON_RT_VISIBLE_CORES");
  } else {
    int count = config.cores_per_node;
    if (const auto num = env("NEURON_RT_NUM_CORES"); num && !trim(*num).empty()) {
      const auto value = parse_count(*num);
      if (!value || *value > config.cores_per_node) {
        throw std::invalid_argument("NEURON_RT_NUM_CORES='" + *num +
                                    "' must be a count from 0 (all) to " +
                                    std::to_string(config.cores_per_node) +
                                    ", the logical cores of " + config.describe() + ".");
      }
      if (*value > 0) count = static_cast<int>(*value);
    }
    for (int c = 0; c < count; ++c) config.visible_cores.push_back(c);
  }

  // A logical core at LNC2 is the pair of physical cores that shares a bank; at LNC1 each
  // physical core is a logical core, and two of them share the bank.
  const int physical_per_logical = config.lnc > 0 ? config.lnc : 1;
  config.cores_per_bank = hw::physical_cores_per_hbm_bank(spec) / physical_per_logical;
  if (config.cores_per_bank < 1) config.cores_per_bank = 1;
  config.bank_bytes = hw::hbm_bank_usable_bytes(spec);
  if (const auto bytes = env("VTRN_HBM_BYTES"); bytes && !trim(*bytes).empty()) {
    const auto value = parse_count(*bytes);
    if (!value || *value == 0) {
      throw std::invalid_argument(
          "VTRN_HBM_BYTES='" + *bytes +
          "' must be a positive byte count (the usable bytes of one HBM bank).");
    }
    config.bank_bytes = static_cast<hw::Bytes>(*value);
  }
  if (const auto mode = env("VTRN_EXECUTION"); mode && !trim(*mode).empty()) {
    const std::string value = trim(*mode);
    if (value != "run" && value != "shapes") {
      throw std::invalid_argument("VTRN_EXECUTION='" + *mode +
                                  "' is not an execution mode; use `run` (compute every kernel) "
                                  "or `shapes` (shape-only: memory and modeled time, no data).");
    }
    config.shapes_only = value == "shapes";
  }
  return config;
}

}  // namespace vtrn::runtime
