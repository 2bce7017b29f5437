// Which logical NeuronCores this process sees, and how much HBM each may use, from the same
// environment variables the Neuron runtime reads.
//
//   NEURON_RT_FAKE_INSTANCE_TYPE  instance to emulate (default trn2.48xlarge)
//   NEURON_LOGICAL_NC_CONFIG      LNC: 1 or 2 on trn2/trn3 (default 2); unset on trn1
//   NEURON_RT_VISIBLE_CORES       cores of the node this process uses: "5", "4-7", "0-3,8"
//   NEURON_RT_NUM_CORES           the first N cores (ignored when VISIBLE_CORES is set; 0 = all)
//   VTRN_HBM_BYTES                overrides the usable bytes of one HBM bank (for tests)
//   VTRN_EXECUTION                `run` (default) or `shapes`: shape-only execution (no data)
//
// Device index i of the process is logical core visible_cores[i] of the node.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vtrn/hw/instance.h"
#include "vtrn/hw/units.h"

namespace vtrn::runtime {

struct DeviceConfig {
  const hw::InstanceSpec* instance = nullptr;
  int lnc = 0;                     ///< 0 on instances without LNC (trn1)
  int cores_per_node = 0;          ///< logical cores of one instance
  std::vector<int> visible_cores;  ///< node core id of each device index
  int cores_per_bank = 1;          ///< logical cores sharing one HBM bank (2 at LNC1 on trn2)
  hw::Bytes bank_bytes = 0;        ///< usable bytes of one HBM bank
  /// VTRN_EXECUTION=shapes: tensors get accounted device memory but no host storage, and
  /// kernels advance the modeled clock without computing.
  bool shapes_only = false;

  int device_count() const { return static_cast<int>(visible_cores.size()); }
  /// The HBM bank (node-wide id) that device index |device| allocates from.
  int bank_of(int device) const { return visible_cores.at(device) / cores_per_bank; }
  /// "trn2.48xlarge, LNC2" for messages.
  std::string describe() const;
};

/// Reads a variable; returns nullopt when unset. Tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;

/// The process environment.
EnvLookup process_env();

/// Builds the configuration. Throws std::invalid_argument with the offending variable, its
/// value and what is accepted.
DeviceConfig device_config_from_env(const EnvLookup& env);

/// Parses "5", "4-7" or "0-3,8" into core ids, each in [0, cores). Throws
/// std::invalid_argument naming |what| on a malformed or out-of-range value.
std::vector<int> parse_core_list(const std::string& text, int cores, const char* what);

}  // namespace vtrn::runtime
