#include "vtrn/coll/route.h"

#include <algorithm>
#include <stdexcept>

namespace vtrn::coll {
namespace {

std::string list_text(std::span<const int> values, size_t limit = 64) {
  std::string out = "[";
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) {
    if (n > limit && i == limit - 4) {
      out += ", ...";
      i = n - 4;
    }
    out += (i ? ", " : "") + std::to_string(values[i]);
  }
  return out + "]";
}

std::string set_text(const std::vector<int>& chips) {
  std::string out = "{";
  for (size_t i = 0; i < chips.size(); ++i) out += (i ? ", " : "") + std::to_string(chips[i]);
  return out + "}";
}

std::string advice(const topo::Cluster& cluster) {
  std::string lnc = cluster.lnc() > 0 ? " at LNC" + std::to_string(cluster.lnc()) : "";
  return "Keep TP within a chip (at most " + std::to_string(cluster.ranks_per_chip()) + " ranks" +
         lnc + "), or use the placement that `vtrn mesh --placement auto` finds.";
}

}  // namespace

std::string_view route_kind_name(RouteKind kind) {
  switch (kind) {
    case RouteKind::kIntraChip:
      return "intra-chip";
    case RouteKind::kIntraNode:
      return "intra-node";
    case RouteKind::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

Route route_group(const topo::Cluster& cluster, const topo::LinkGraph& graph,
                  std::span<const int> ranks) {
  if (ranks.empty()) throw std::invalid_argument("the group is empty; give at least one rank");
  const int world = cluster.world();
  const int chips = cluster.chips_per_node();

  // (global chip, rank) sorted: runs of equal chips, and chips of one node are adjacent.
  std::vector<int> chip_of(ranks.size());
  std::vector<int> sorted(ranks.begin(), ranks.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= world) {
      throw std::invalid_argument("rank " + std::to_string(sorted[i]) +
                                  " of the group is outside the world [0, " +
                                  std::to_string(world) + ") of " + cluster.describe());
    }
    if (i > 0 && sorted[i] == sorted[i - 1]) {
      throw std::invalid_argument("rank " + std::to_string(sorted[i]) +
                                  " appears twice in the group; list each rank once");
    }
    chip_of[i] = sorted[i] / cluster.ranks_per_chip();  // global chip id (ranks are row-major)
  }

  Route route;
  route.ranks = static_cast<int>(ranks.size());
  route.whole_chips = true;
  std::vector<int> node_ids, node_counts;
  const auto& spec = cluster.spec();
  for (size_t i = 0; i < chip_of.size();) {
    // One node's part: [i, end).
    const int node = chip_of[i] / chips;
    size_t end = i;
    topo::ChipMask mask = 0;
    int chip_count = 0;
    while (end < chip_of.size() && chip_of[end] / chips == node) {
      size_t run = end;
      while (run < chip_of.size() && chip_of[run] == chip_of[end]) ++run;
      const int on_chip = static_cast<int>(run - end);
      route.ranks_per_chip = std::max(route.ranks_per_chip, on_chip);
      if (on_chip != cluster.ranks_per_chip()) route.whole_chips = false;
      mask |= topo::ChipMask{1} << (chip_of[end] % chips);
      ++chip_count;
      end = run;
    }
    node_ids.push_back(node);
    node_counts.push_back(static_cast<int>(end - i));
    route.chips_per_node = std::max(route.chips_per_node, chip_count);
    if (chip_count > 1) {
      auto parts = graph.components(mask);
      if (parts.size() > 1 && route.routable) {
        route.routable = false;
        route.bad_node = node;
        route.disconnected = parts;
      }
      if (route.routable) {
        hw::BytesPerSecond slowest = route.node_chip_Bps;
        for (int chip : topo::LinkGraph::chips_of(mask)) {
          hw::BytesPerSecond bw = std::min(graph.induced_degree(chip, mask) * spec.link_Bps,
                                           spec.chip->neuronlink_intra_Bps);
          if (slowest == 0 || bw < slowest) slowest = bw;
        }
        route.node_chip_Bps = slowest;
        route.mean_hops = std::max(route.mean_hops, graph.mean_hops(mask));
      }
    }
    i = end;
  }
  route.nodes = static_cast<int>(node_ids.size());
  route.kind = route.nodes > 1            ? RouteKind::kHierarchical
               : route.chips_per_node > 1 ? RouteKind::kIntraNode
                                          : RouteKind::kIntraChip;
  route.nodes_joined = graph.nodes_joined(node_ids);

  std::string cause;
  if (!route.routable) {
    std::string sets;
    for (size_t s = 0; s < route.disconnected.size(); ++s) {
      sets += (s == 0                               ? ""
               : s + 1 == route.disconnected.size() ? " and "
                                                    : ", ") +
              set_text(route.disconnected[s]);
    }
    cause = "On node " + std::to_string(route.bad_node) + " the group's chips form " +
            std::to_string(route.disconnected.size()) +
            " sets with no NeuronLink between them: chips " + sets +
            ". The collective library routes only through the group's own chips, and no chip of "
            "the group "
            "links these sets.";
  } else if (route.nodes > 1) {
    for (size_t n = 1; n < node_counts.size(); ++n) {
      if (node_counts[n] != node_counts[0]) {
        route.routable = false;
        cause = "The group has " + std::to_string(node_counts[0]) + " ranks on node " +
                std::to_string(node_ids[0]) + " but " + std::to_string(node_counts[n]) +
                " on node " + std::to_string(node_ids[n]) +
                "; the hierarchical algorithm needs the same number of ranks on every node.";
        break;
      }
    }
  }
  if (!route.routable) {
    route.error = "ENC:enc_init_comm " + std::string(kNoAlgorithmText) +
                  " replica-group: " + list_text(ranks) + "\n" + cause + "\n" + advice(cluster);
    route.node_chip_Bps = 0;
    route.mean_hops = 0;
  }
  return route;
}

}  // namespace vtrn::coll
