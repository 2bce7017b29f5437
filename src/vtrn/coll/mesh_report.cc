#include "vtrn/coll/mesh_report.h"

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
    for (size_t g = 0; g < ax.groups.size(); ++g) {
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
        for (const Route& route : routes) {
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
