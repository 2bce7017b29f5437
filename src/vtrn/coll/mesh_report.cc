#include "vtrn/coll/mesh_report.h"

#include <map>

namespace vtrn::coll {

Collective axis_collective(topo::AxisRole role) {
  switch (role) {
    case topo::AxisRole::kPipeline:
      return Collective::kSendRecv;
    case topo::AxisRole::kReplicate:
      return Collective::kAllReduce;
    case topo::AxisRole::kShard:
      return Collective::kAllGather;
    case topo::AxisRole::kTensor:
      return Collective::kAllReduce;
  }
  return Collective::kAllReduce;
}

std::vector<hw::Bytes> default_report_sizes() { return {hw::KiB(64), hw::MiB(16), hw::MiB(256)}; }

MeshReport analyze_mesh(const topo::Cluster& cluster, const topo::LinkGraph& graph,
                        const topo::Mesh& mesh, std::span<const hw::Bytes> sizes) {
  MeshReport report;
  for (int axis = 0; axis < mesh.dims(); ++axis) {
    AxisReport ax;
    ax.name = mesh.names()[axis];
    ax.size = mesh.shape()[axis];
    ax.role = mesh.role(axis);
    ax.collective = axis_collective(ax.role);
    ax.groups = mesh.groups(axis);
    ax.group_routable.reserve(ax.groups.size());
    std::vector<Route> routes;
    routes.reserve(ax.groups.size());
    // A group that is an earlier one moved by whole nodes (every rank by the same multiple of
    // the ranks per node) uses the same chips and links of another node: it routes alike, so
    // its route is the earlier one's (not in an UltraServer, where nodes differ).
    const int per_node = cluster.ranks_per_node();
    const bool by_node = cluster.spec().ultraserver_nodes <= 1 && per_node > 0;
    std::map<int, std::vector<size_t>> reps;  // by first rank within its node
    std::vector<bool> translate(ax.groups.size(), false);
    for (size_t g = 0; g < ax.groups.size(); ++g) {
      const std::vector<int>& grp = ax.groups[g];
      if (by_node && !grp.empty()) {
        auto& at = reps[grp[0] % per_node];
        for (size_t r : at) {
          const std::vector<int>& rep = ax.groups[r];
          const int delta = grp[0] - rep[0];
          if (rep.size() != grp.size() || delta % per_node != 0) continue;
          bool same = true;
          for (size_t j = 0; j < grp.size() && same; ++j) same = grp[j] - rep[j] == delta;
          if (same) {
            translate[g] = true;
            routes.push_back(routes[r]);
            ax.group_routable.push_back(routes[r].routable);
            break;
          }
        }
        if (translate[g]) continue;
        at.push_back(g);
      }
      Route route = route_group(cluster, graph, ax.groups[g]);
      ax.group_routable.push_back(route.routable);
      if (!route.routable && ax.routable) {
        ax.routable = false;
        ax.first_bad_group = static_cast<int>(g);
        ax.error = route.error;
        ax.disconnected = route.disconnected;
        ax.bad_node = route.bad_node;
      }
      routes.push_back(std::move(route));
    }
    if (ax.routable) {
      for (hw::Bytes bytes : sizes) {
        SizeEstimate worst;
        worst.bytes = bytes;
        const Route* slowest = nullptr;
        for (size_t g = 0; g < routes.size(); ++g) {
          if (translate[g]) continue;
          const Route& route = routes[g];
          Estimate e = estimate(cluster, route, ax.collective, bytes);
          if (!slowest || e.seconds > worst.estimate.seconds) {
            worst.estimate = e;
            slowest = &route;
          }
        }
        for (int c = 0; c < kCollectiveCount; ++c) {
          worst.seconds_by_collective[c] =
              estimate(cluster, *slowest, kCollectives[c], bytes).seconds;
        }
        ax.estimates.push_back(worst);
      }
    }
    report.routable = report.routable && ax.routable;
    report.axes.push_back(std::move(ax));
  }
  return report;
}

}  // namespace vtrn::coll
