// A cluster: |nodes| instances of one type at one LNC setting, and where each rank lives.
//
// Ranks are numbered row-major, as the runtime numbers logical cores (trn2_lnc2.png /
// trn2_lnc1.png): node, then chip, then the logical core position on the chip. At LNC2 on a
// trn2.48xlarge, `rank = 64 * node + 4 * chip + core`. Chip ids are row-major on the chip grid:
// chip = row * cols + col. In an UltraServer the node's index inside it is the Z coordinate.
#pragma once

#include <string>
#include <string_view>

#include "vtrn/hw/instance.h"

namespace vtrn::topo {

struct RankLocation {
  int node;  ///< instance index, 0 .. nodes-1
  int chip;  ///< chip index inside the node, 0 .. chips-1
  int core;  ///< logical core position on the chip, 0 .. ranks_per_chip-1
  bool operator==(const RankLocation&) const = default;
};

/// Position of a chip on the torus: grid row and column inside its node, and z = the node's
/// position inside its UltraServer (0 when the instance is not part of one).
struct ChipCoord {
  int row;
  int col;
  int z;
  bool operator==(const ChipCoord&) const = default;
};

class Cluster {
 public:
  /// The largest cluster vtrn models. 4,096 nodes is 65,536 trn2 chips, and 2^20 ranks is
  /// 4,096 nodes at LNC1 (128 ranks each) with room to spare. The caps keep every rank, chip id
  /// and product of mesh axis sizes far inside 32-bit ints, and bound what a report holds (the
  /// model keeps a few ints per rank and lists every group): `vtrn mesh` on the largest world
  /// takes seconds and under 100 MB (524,288 ranks: 0.5 s text, 2.9 s --json, 88 MB peak)
  /// instead of hanging or exhausting memory.
  static constexpr long long kMaxNodes = 4096;
  static constexpr long long kMaxWorld = 1LL << 20;

  /// Throws std::invalid_argument for an unknown instance, an LNC the instance lacks, nodes
  /// outside [1, kMaxNodes], a world above kMaxWorld, or several nodes of an instance whose EFA
  /// bandwidth is undocumented.
  explicit Cluster(std::string_view instance = "trn2.48xlarge", int lnc = 0, int nodes = 1);

  /// The error for a node count outside [1, kMaxNodes], |nodes| as the caller wrote it (it may
  /// not fit an int); empty when |nodes| is in range.
  static std::string nodes_error(long long nodes);
  static std::string nodes_error_text(std::string_view nodes);

  const hw::InstanceSpec& spec() const { return *spec_; }
  /// The LNC in effect; 0 for instances without LNC (one rank per physical core).
  int lnc() const { return lnc_; }
  int nodes() const { return nodes_; }
  int chips_per_node() const { return spec_->chips; }
  int ranks_per_chip() const { return ranks_per_chip_; }
  int ranks_per_node() const { return ranks_per_chip_ * spec_->chips; }
  int world() const { return ranks_per_node() * nodes_; }

  /// Where |rank| lives. Throws std::out_of_range when rank is not in [0, world).
  RankLocation locate(int rank) const;
  int rank_of(const RankLocation& loc) const;
  /// Cluster-wide chip id: node * chips_per_node + chip.
  int global_chip(int rank) const;
  ChipCoord chip_coord(int node, int chip) const;
  /// The UltraServer that holds |node| (node / ultraserver_nodes).
  int ultraserver_of(int node) const { return node / spec_->ultraserver_nodes; }

  /// "1 x trn2.48xlarge, LNC2, 64 ranks" for messages.
  std::string describe() const;

 private:
  const hw::InstanceSpec* spec_;
  int lnc_;
  int nodes_;
  int ranks_per_chip_;
};

}  // namespace vtrn::topo
