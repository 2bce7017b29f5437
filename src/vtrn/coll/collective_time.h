// Which algorithm the collective library picks for a routable group, and the modeled time of
// each collective. The model and its assumptions are written down in docs/collectives.md; every
// bandwidth and latency comes from hw.
//
// A group is seen in three tiers, each with its own latency α and bandwidth B:
//   chip  : the group's k ranks of one chip, over DMA    (α = DMA start cost, B = DMA of one
//   logical core) node  : the group's c chips of one node, NeuronLink  (α = hop latency,   B =
//   Route::node_chip_Bps) net   : the group's n nodes, EFA or UltraServer links (α = EFA / hop
//   latency, B = one chip's share)
// With S the message size in bytes (the full buffer: all-reduce input, all-gather output,
// reduce-scatter input, all-to-all send buffer, broadcast and send/recv message):
//   all-gather = reduce-scatter = net + node + chip, where
//     net  = steps_net  * α_net + (n-1)/n * S / (c * B_net)
//     node = steps_node * α_hop + h * (c-1)/c * S / B_node      (h = mean hops for Mesh, else 1)
//     chip = α_dma + (k-1)/k * S / B_dma                        (folded into Ring and KangaRing)
//   all-reduce = reduce-scatter + all-gather
//   broadcast  = min(binomial tree, scatter + all-gather)            (never above all-reduce)
//   send/recv  = α + S / B of the widest tier the group spans        (algorithm "P2P")
//   steps: Mesh 1, RDH ceil(log2 m), Ring m-1 over every rank (c*k - 1 inside a node),
//          KangaRing c*k/2 - 1 (a ring over one primary per pair of ranks).
#pragma once

#include <array>
#include <string_view>

#include "vtrn/coll/route.h"
#include "vtrn/hw/units.h"
#include "vtrn/topo/cluster.h"

namespace vtrn::coll {

/// kPointToPoint ("P2P") labels send/recv, a single transfer rather than a group algorithm.
enum class Algorithm {
  kNone,
  kIntraChip,
  kMesh,
  kRDH,
  kKangaRing,
  kRing,
  kHierarchical,
  kPointToPoint
};
enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };
inline constexpr int kCollectiveCount = 6;
inline constexpr std::array<Collective, kCollectiveCount> kCollectives = {
    Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
    Collective::kAllToAll,  Collective::kBroadcast, Collective::kSendRecv};

std::string_view algorithm_name(Algorithm algorithm);     ///< "Mesh", "RDH", "KangaRing", ...
std::string_view collective_name(Collective collective);  ///< "all_reduce", "all_gather", ...
/// Parses a collective_name(); throws std::invalid_argument listing the names.
Collective parse_collective(std::string_view name);

/// The algorithm the runtime would pick: the top-level name, and the algorithms of the
/// node tier (among chips of one node) and the net tier (among nodes), kNone where absent.
struct Choice {
  Algorithm algorithm = Algorithm::kNone;
  Algorithm node = Algorithm::kNone;
  Algorithm net = Algorithm::kNone;
};

struct Estimate {
  Choice choice;
  hw::Seconds seconds = 0;
};

/// The algorithm for a message of |bytes| on a routable |route|:
///   one chip: IntraChip; one node: Mesh below 1 MiB, RDH up to 56 MiB, then KangaRing when
///   every rank of each chip is in the group, else Ring; several nodes: Hierarchical, with that
///   choice inside each node and Mesh / RDH (node count a power of two) / Ring between nodes.
/// Throws std::invalid_argument when |route| is not routable.
Choice select_algorithm(const Route& route, hw::Bytes bytes);

/// Modeled time of |collective| with a |bytes| buffer on a routable |route| of |cluster|. The
/// choice is select_algorithm()'s, except send/recv, whose algorithm is kPointToPoint.
Estimate estimate(const topo::Cluster& cluster, const Route& route, Collective collective,
                  hw::Bytes bytes);

}  // namespace vtrn::coll
