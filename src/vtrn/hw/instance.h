// Instance specs: how many chips, how they are wired, which LNC settings exist, and the
// network between instances. Specs are data (specs.cc): adding an instance type adds one
// entry there and touches nothing else.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "vtrn/hw/chip.h"
#include "vtrn/hw/units.h"

namespace vtrn::hw {

/// How the chips of one instance are connected by NeuronLink.
enum class ChipTopology {
  kSingleChip,  ///< one chip, no NeuronLink peers
  kTorus2D,     ///< rows x cols grid with wraparound links on both axes
  kSwitch,      ///< every chip reaches every other chip in one hop (NeuronSwitch)
};

/// How the instances of one UltraServer are joined.
enum class UltraServerFabric {
  kNone,    ///< instances talk over EFA only
  kZRing,   ///< chip (r, c) of each instance is on a ring with chip (r, c) of the others (3D torus)
  kSwitch,  ///< switched: any chip of any instance of the UltraServer in one hop
};

struct InstanceSpec {
  std::string_view name;     ///< "trn2.48xlarge"
  std::string_view summary;  ///< one line for listings
  const ChipSpec* chip;
  int chips;  ///< chips per instance (a "node")
  ChipTopology topology;
  int grid_rows;  ///< chip id = row * grid_cols + col
  int grid_cols;
  BytesPerSecond link_Bps;  ///< one chip-to-chip link inside the instance (one direction)
  Seconds hop_latency;      ///< per NeuronLink hop

  std::span<const int> lnc_allowed;  ///< empty: the instance has no LNC setting (trn1)
  int lnc_default;                   ///< 0 when lnc_allowed is empty

  int ultraserver_nodes;  ///< instances per UltraServer; 1 when not an UltraServer
  UltraServerFabric ultraserver_fabric;
  BytesPerSecond ultraserver_chip_Bps;  ///< per chip, to the other instances of the UltraServer

  BytesPerSecond efa_Bps;  ///< per instance; 0 when undocumented (multi-node refused)
  Seconds efa_latency;     ///< one EFA hop, HBM to HBM

  /// Ranks (logical cores) per chip at |lnc| (0 = no LNC: one rank per physical core).
  int ranks_per_chip(int lnc) const { return chip->physical_cores / (lnc > 0 ? lnc : 1); }
  /// HBM available to one logical core at |lnc|.
  Bytes hbm_per_rank(int lnc) const { return chip->hbm / static_cast<Bytes>(ranks_per_chip(lnc)); }
  /// EFA bandwidth of one chip's share (the instance's NICs are spread evenly over its chips).
  BytesPerSecond efa_chip_Bps() const { return efa_Bps / chips; }
  bool has_lnc() const { return !lnc_allowed.empty(); }
};

/// Every known instance spec, in listing order.
std::span<const InstanceSpec> instances();

/// The spec named |name|. Throws std::invalid_argument naming the known instances.
const InstanceSpec& find_instance(std::string_view name);

/// Validates |requested| (0 = the instance default) against |spec| and returns the LNC in
/// effect (0 for instances without LNC). Throws std::invalid_argument with the allowed values.
int resolve_lnc(const InstanceSpec& spec, int requested);

/// "trn1.32xlarge, trn2.48xlarge, ..." for error messages.
std::string instance_names();

}  // namespace vtrn::hw
