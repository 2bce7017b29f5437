#include "vtrn/coll/collective_time.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "vtrn/hw/runtime.h"

namespace vtrn::coll {
namespace {

int ceil_log2(int m) {
  int steps = 0;
  while ((1 << steps) < m) ++steps;
  return steps;
}

bool power_of_two(int m) { return m > 0 && (m & (m - 1)) == 0; }

// Tier parameters of one group on one cluster.
struct Tiers {
  double n, c, k, p;
  hw::Seconds dma_latency, hop_latency, net_latency;
  hw::BytesPerSecond dma_Bps, node_Bps, link_Bps, net_Bps;
  double mean_hops;
};

Tiers tiers_of(const topo::Cluster& cluster, const Route& route) {
  const hw::InstanceSpec& spec = cluster.spec();
  Tiers t;
  t.n = route.nodes;
  t.c = route.chips_per_node;
  t.k = route.ranks_per_chip;
  t.p = route.ranks;
  t.dma_latency = spec.chip->dma_latency;
  t.dma_Bps = spec.chip->dma_core_Bps * (cluster.lnc() > 0 ? cluster.lnc() : 1);
  t.hop_latency = spec.hop_latency;
  t.node_Bps = route.node_chip_Bps;
  t.link_Bps = spec.link_Bps;
  t.mean_hops = route.mean_hops;
  if (route.nodes_joined && route.nodes > 1) {
    t.net_latency = spec.hop_latency;
    t.net_Bps = spec.ultraserver_chip_Bps;
  } else {
    t.net_latency = spec.efa_latency;
    t.net_Bps = spec.efa_chip_Bps();
  }
  return t;
}

int node_steps(Algorithm algorithm, const Tiers& t) {
  const int c = static_cast<int>(t.c), k = static_cast<int>(t.k);
  switch (algorithm) {
    case Algorithm::kMesh:
      return 1;
    case Algorithm::kRDH:
      return ceil_log2(c);
    case Algorithm::kRing:
      return c * k - 1;
    case Algorithm::kKangaRing:
      return std::max(c * k / 2 - 1, 1);
    default:
      return 0;
  }
}

int net_steps(Algorithm algorithm, const Tiers& t) {
  const int n = static_cast<int>(t.n);
  switch (algorithm) {
    case Algorithm::kMesh:
      return 1;
    case Algorithm::kRDH:
      return ceil_log2(n);
    case Algorithm::kRing:
      return n - 1;
    default:
      return 0;
  }
}

// One all-gather (or reduce-scatter) of S bytes.
hw::Seconds gather_time(const Choice& choice, const Tiers& t, double S) {
  hw::Seconds total = 0;
  if (t.n > 1)
    total += net_steps(choice.net, t) * t.net_latency + (t.n - 1) / t.n * S / (t.c * t.net_Bps);
  bool folded = false;
  if (t.c > 1) {
    const double h = choice.node == Algorithm::kMesh ? t.mean_hops : 1.0;
    total += node_steps(choice.node, t) * t.hop_latency + h * (t.c - 1) / t.c * S / t.node_Bps;
    folded = choice.node == Algorithm::kRing || choice.node == Algorithm::kKangaRing;
  }
  if (t.k > 1 && !folded) total += t.dma_latency + (t.k - 1) / t.k * S / t.dma_Bps;
  return total;
}

hw::Seconds all_to_all_time(const Tiers& t, double S) {
  hw::Seconds total = 0;
  if (t.n > 1) total += t.net_latency + t.k * (t.n - 1) / t.n * S / t.net_Bps;
  if (t.c > 1)
    total += t.hop_latency + t.mean_hops * t.k * (t.c - 1) / (t.c * t.n) * S / t.node_Bps;
  if (t.k > 1) total += t.dma_latency + (t.k - 1) / t.p * S / t.dma_Bps;
  return total;
}

// The root's message forwarded whole down a binomial tree in each tier the group spans.
hw::Seconds tree_broadcast_time(const Tiers& t, double S) {
  hw::Seconds total = 0;
  if (t.n > 1) total += ceil_log2(static_cast<int>(t.n)) * t.net_latency + S / t.net_Bps;
  if (t.c > 1) total += ceil_log2(static_cast<int>(t.c)) * t.hop_latency + S / t.node_Bps;
  if (t.k > 1) total += t.dma_latency + S / t.dma_Bps;
  return total;
}

// The cheaper of the tree and of a scatter followed by an all-gather (van de Geijn) over the
// algorithm picked for the size. The second moves the same data as an all-reduce, so a
// broadcast is never modeled slower than an all-reduce of the same buffer: for small messages
// Mesh's one step beats the tree's ceil(log2 m) hops, for large ones the scatter's split message
// beats forwarding it whole.
hw::Seconds broadcast_time(const Choice& choice, const Tiers& t, double S) {
  return std::min(tree_broadcast_time(t, S), 2 * gather_time(choice, t, S));
}

hw::Seconds send_recv_time(const Tiers& t, double S) {
  if (t.p < 2) return 0;
  if (t.n > 1) return t.net_latency + S / t.net_Bps;
  if (t.c > 1) return t.hop_latency + S / t.link_Bps;
  return t.dma_latency + S / t.dma_Bps;
}

}  // namespace

std::string_view algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kNone:
      return "none";
    case Algorithm::kIntraChip:
      return "IntraChip";
    case Algorithm::kMesh:
      return "Mesh";
    case Algorithm::kRDH:
      return "RDH";
    case Algorithm::kKangaRing:
      return "KangaRing";
    case Algorithm::kRing:
      return "Ring";
    case Algorithm::kHierarchical:
      return "Hierarchical";
    case Algorithm::kPointToPoint:
      return "P2P";
  }
  return "?";
}

std::string_view collective_name(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllToAll:
      return "all_to_all";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kSendRecv:
      return "send_recv";
  }
  return "?";
}

Collective parse_collective(std::string_view name) {
  std::string known;
  for (Collective c : kCollectives) {
    if (collective_name(c) == name) return c;
    known += (known.empty() ? "" : ", ") + std::string(collective_name(c));
  }
  throw std::invalid_argument("unknown collective '" + std::string(name) + "'; use one of " +
                              known);
}

Choice select_algorithm(const Route& route, hw::Bytes bytes) {
  if (!route.routable)
    throw std::invalid_argument("no algorithm for an unroutable group: " + route.error);
  Choice choice;
  if (route.chips_per_node > 1) {
    if (bytes < hw::kMeshBelowBytes) {
      choice.node = Algorithm::kMesh;
    } else if (bytes <= hw::kRdhUpToBytes) {
      choice.node = Algorithm::kRDH;
    } else {
      choice.node = route.whole_chips ? Algorithm::kKangaRing : Algorithm::kRing;
    }
  }
  if (route.nodes > 1) {
    if (bytes < hw::kMeshBelowBytes) {
      choice.net = Algorithm::kMesh;
    } else if (bytes <= hw::kRdhUpToBytes && power_of_two(route.nodes)) {
      choice.net = Algorithm::kRDH;
    } else {
      choice.net = Algorithm::kRing;
    }
    choice.algorithm = Algorithm::kHierarchical;
  } else {
    choice.algorithm = route.chips_per_node > 1 ? choice.node : Algorithm::kIntraChip;
  }
  return choice;
}

Estimate estimate(const topo::Cluster& cluster, const Route& route, Collective collective,
                  hw::Bytes bytes) {
  Estimate out;
  out.choice = select_algorithm(route, bytes);  // also rejects an unroutable route
  // Send/recv is one transfer between two ranks, not one of the group algorithms.
  if (collective == Collective::kSendRecv) out.choice = Choice{Algorithm::kPointToPoint};
  if (route.ranks < 2) return out;
  const Tiers t = tiers_of(cluster, route);
  const double S = static_cast<double>(bytes);
  switch (collective) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      out.seconds = gather_time(out.choice, t, S);
      break;
    case Collective::kAllReduce:
      out.seconds = 2 * gather_time(out.choice, t, S);
      break;
    case Collective::kAllToAll:
      out.seconds = all_to_all_time(t, S);
      break;
    case Collective::kBroadcast:
      out.seconds = broadcast_time(out.choice, t, S);
      break;
    case Collective::kSendRecv:
      out.seconds = send_recv_time(t, S);
      break;
  }
  return out;
}

}  // namespace vtrn::coll
