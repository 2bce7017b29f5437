// Everything `vtrn mesh` shows about a mesh: each axis's groups, whether each is routable, the
// first error, and the algorithm and modeled time of the axis's collective at a few sizes.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "vtrn/coll/collective_time.h"
#include "vtrn/coll/route.h"
#include "vtrn/topo/link_graph.h"
#include "vtrn/topo/mesh.h"

namespace vtrn::coll {

/// The collective an axis mostly runs: tp and replicate all-reduce, shard (dp, fsdp)
/// all-gathers parameters (and reduce-scatters gradients, same modeled time), pp sends.
Collective axis_collective(topo::AxisRole role);

struct SizeEstimate {
  hw::Bytes bytes = 0;
  /// The slowest group of the axis for the axis's collective, and its algorithm.
  Estimate estimate;
  /// That same group's time for every collective, indexed like kCollectives.
  std::array<hw::Seconds, kCollectiveCount> seconds_by_collective{};
};

struct AxisReport {
  std::string name;
  int size = 0;
  topo::AxisRole role = topo::AxisRole::kShard;
  Collective collective = Collective::kAllGather;
  std::vector<std::vector<int>> groups;
  std::vector<char> group_routable;  ///< per group (char, not vector<bool>, for the bindings)
  bool routable = true;
  int first_bad_group = -1;
  std::string error;  ///< of the first unroutable group; empty when routable
  std::vector<std::vector<int>> disconnected;  ///< of the first unroutable group
  int bad_node = -1;
  std::vector<SizeEstimate> estimates;  ///< empty unless routable
};

struct MeshReport {
  bool routable = true;
  std::vector<AxisReport> axes;
};

/// The sizes `vtrn mesh` reports by default: 64 KiB (Mesh), 16 MiB (RDH), 256 MiB (KangaRing/Ring).
std::vector<hw::Bytes> default_report_sizes();

MeshReport analyze_mesh(const topo::Cluster& cluster, const topo::LinkGraph& graph,
                        const topo::Mesh& mesh, std::span<const hw::Bytes> sizes);

}  // namespace vtrn::coll
