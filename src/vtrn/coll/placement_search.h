// Placement search: for a mesh whose row-major placement has a group the collective library
// cannot route, find a rank matrix where every group is routable.
//
// A candidate is a fill order of the mesh axes (the given order, and the same order with `tp`
// moved innermost) plus a chip order: mesh positions, taken in fill order, fill the logical
// cores of chip_order[0], then chip_order[1], ... on every node alike.
//
// A few structured chip orders, generic in the grid's size, are tried first (row-major,
// column-major, snake, NxD's mirrored rows, column pairs of adjacent rows); none is written for
// a particular mesh. Then chip orders are searched depth first: slot by slot, each constraint
// (the set of slots one group touches on a node) is checked when its last slot is placed, and
// a partial one is pruned when its placed chips can no longer join through the chips still
// free. Chip 0 takes slot 0 (every supported topology is vertex-transitive). Among the
// placements found, the best has the fewest TP groups spread over several chips, then the
// lowest modeled time of the mesh's collectives (the sum over axes of the slowest group's axis
// collective at `cost_bytes`). A routable row-major placement wins ties.
#pragma once

#include <string>
#include <vector>

#include "vtrn/coll/mesh_report.h"
#include "vtrn/hw/units.h"
#include "vtrn/topo/link_graph.h"
#include "vtrn/topo/mesh.h"

namespace vtrn::coll {

struct PlacementSearchOptions {
  hw::Bytes cost_bytes = hw::MiB(64);  ///< message size of the cost comparison
  long max_steps = 2'000'000;          ///< chip placements tried, over all fill orders
  int max_solutions = 1024;  ///< routable placements compared per fill order (depth-first part)
  bool structured_orders = true;  ///< also try the structured chip orders (false: depth-first only)
};

struct PlacementSearchResult {
  bool found = false;
  std::vector<int> placement;     ///< rank at each mesh position, row-major over the shape
  std::vector<int> chip_order;    ///< node-local chip of each slot
  std::vector<int> fill_order;    ///< axes, outermost first
  bool default_routable = false;  ///< the row-major placement is routable
  bool is_default = false;        ///< the result is the row-major placement
  int tp_groups_off_chip = 0;     ///< TP groups spread over several chips
  hw::Seconds cost = 0;           ///< see the file comment
  long steps = 0;
  int solutions = 0;
  std::string message;  ///< why nothing was found
};

/// The mesh's cost for the search (see the file comment); -1 when some group is not routable.
hw::Seconds placement_cost(const topo::Cluster& cluster, const topo::LinkGraph& graph,
                           const topo::Mesh& mesh, hw::Bytes cost_bytes,
                           int* tp_groups_off_chip = nullptr);

/// Throws std::invalid_argument for a bad shape or names (as topo::Mesh does).
PlacementSearchResult search_placement(const topo::Cluster& cluster, const topo::LinkGraph& graph,
                                       const std::vector<int>& shape,
                                       const std::vector<std::string>& names,
                                       const PlacementSearchOptions& options = {});

}  // namespace vtrn::coll
