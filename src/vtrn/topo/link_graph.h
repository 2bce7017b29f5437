// The NeuronLink graph of a cluster.
//
// Inside a node the chips form the instance's topology: a rows x cols torus with wraparound
// links on both axes (trn1, trn2: each chip links to its row and column neighbours), a switch
// that joins every pair of chips (trn3), or a single chip. In a Trn2 UltraServer chip (r, c) of
// each instance is also on a ring (Z) with chip (r, c) of the other instances. Nodes are
// otherwise joined by EFA, which is not a NeuronLink edge.
//
// Chip sets are node-local chip ids; the set operations take a bit mask (bit i = chip i), which
// bounds chips per node at 64.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vtrn/topo/cluster.h"

namespace vtrn::topo {

using ChipMask = std::uint64_t;

enum class LinkKind {
  kNeuronLink,   ///< between two chips of one node
  kNeuronLinkZ,  ///< between the same chip of two nodes of one UltraServer
};

/// One bidirectional link between two cluster-wide chip ids (node * chips + chip).
struct Link {
  int a;
  int b;
  LinkKind kind;
};

class LinkGraph {
 public:
  explicit LinkGraph(const Cluster& cluster);

  int chips() const { return static_cast<int>(neighbors_.size()); }
  /// Node-local neighbours of node-local |chip| (the same in every node), ascending.
  const std::vector<int>& neighbors(int chip) const { return neighbors_[chip]; }
  bool adjacent(int a, int b) const { return (masks_[a] >> b) & 1u; }
  ChipMask neighbor_mask(int chip) const { return masks_[chip]; }

  /// Connected components of the subgraph induced by |chips|: links between two chips of the
  /// set only, never through a chip outside it. Each component ascending, components ordered by
  /// their smallest chip.
  std::vector<std::vector<int>> components(ChipMask chips) const;
  bool connected(ChipMask chips) const;
  /// Links of |chip| to other members of |chips|.
  int induced_degree(int chip, ChipMask chips) const;
  /// Mean shortest-path hop count over ordered pairs of distinct chips of |chips|, inside the
  /// induced subgraph. Precondition: connected(chips) and at least two chips.
  double mean_hops(ChipMask chips) const;

  /// Whether the nodes in |nodes| are joined by NeuronLink (same UltraServer, and connected on
  /// the Z ring using only those nodes, or switched). A single node is trivially joined.
  bool nodes_joined(std::span<const int> nodes) const;

  /// Every link of the cluster, intra-node links first, node by node.
  std::vector<Link> links() const;

  static ChipMask mask_of(std::span<const int> chips);
  static std::vector<int> chips_of(ChipMask mask);

 private:
  Cluster cluster_;  // a copy: small, and a graph may outlive the caller's cluster
  std::vector<std::vector<int>> neighbors_;
  std::vector<ChipMask> masks_;
};

}  // namespace vtrn::topo
