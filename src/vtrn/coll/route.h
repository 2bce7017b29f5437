// Can the collective library build an algorithm for a group of ranks?
//
// The rules (SDK neuron-runtime/explore/intranode-collective-comm.rst,
// internode-collective-comm.rst, and the TP8 x FSDP8 example of "Best practices for training on
// AWS Neuron"):
//   * every rank on one chip: intra-chip, always possible;
//   * several chips of one node: the chips that hold the group's ranks must form a connected
//     subgraph of the NeuronLink graph using only those chips (no hop through a chip outside
//     the group); otherwise neither Mesh nor the hierarchical algorithm can be built;
//   * several nodes: hierarchical. Every node's part must be routable by the rule above, and
//     every node must hold the same number of the group's ranks.
// When no algorithm exists the error starts with the runtime's own text:
//   "failed (2) to init a collective algorithm. reason: no_hier no_mesh".
#pragma once

#include <span>
#include <string>
#include <vector>

#include "vtrn/hw/units.h"
#include "vtrn/topo/cluster.h"
#include "vtrn/topo/link_graph.h"

namespace vtrn::coll {

enum class RouteKind {
  kIntraChip,     ///< all ranks on one chip
  kIntraNode,     ///< several chips of one node, over NeuronLink
  kHierarchical,  ///< several nodes: intra-node stage plus inter-node stage
};

std::string_view route_kind_name(RouteKind kind);

/// The runtime's error text, verbatim.
inline constexpr std::string_view kNoAlgorithmText =
    "failed (2) to init a collective algorithm. reason: no_hier no_mesh";

struct Route {
  bool routable = true;
  RouteKind kind = RouteKind::kIntraChip;
  /// Empty when routable; else the runtime's text, the cause with its values, and what to do.
  std::string error;
  /// When a node's part is not connected: that node, and its chip sets with no link between them.
  int bad_node = -1;
  std::vector<std::vector<int>> disconnected;

  // The group's shape, for the time model (maxima over nodes and chips).
  int ranks = 0;
  int nodes = 0;
  int chips_per_node = 0;
  int ranks_per_chip = 0;
  /// Every rank of each of the group's chips is in the group (KangaRing's condition).
  bool whole_chips = false;
  /// The slowest chip's NeuronLink bandwidth to the group's other chips of its node: its links
  /// into the group times the link bandwidth, capped by the chip's NeuronLink total. 0 when
  /// the group has one chip per node.
  hw::BytesPerSecond node_chip_Bps = 0;
  /// Mean hop count between the group's chips of one node, inside the group (worst node).
  double mean_hops = 0;
  /// The nodes are joined by NeuronLink (one UltraServer) instead of EFA only.
  bool nodes_joined = false;
};

/// Checks |ranks| against the placement of |cluster|. Throws std::invalid_argument for an
/// empty group, a rank outside the world or a repeated rank.
Route route_group(const topo::Cluster& cluster, const topo::LinkGraph& graph,
                  std::span<const int> ranks);

}  // namespace vtrn::coll
