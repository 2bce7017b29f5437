#include "vtrn/coll/placement_search.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>

namespace vtrn::coll {
namespace {

using topo::ChipMask;

int count_tp_off_chip(const topo::Cluster& cluster, const topo::Mesh& mesh) {
  int off = 0;
  for (int axis = 0; axis < mesh.dims(); ++axis) {
    if (mesh.role(axis) != topo::AxisRole::kTensor) continue;
    for (const auto& group : mesh.groups(axis)) {
      const int chip = cluster.global_chip(group[0]);
      for (int r : group) {
        if (cluster.global_chip(r) != chip) {
          ++off;
          break;
        }
      }
    }
  }
  return off;
}

// One fill order's search state.
struct Search {
  const topo::Cluster& cluster;
  const topo::LinkGraph& graph;
  const std::vector<int>& shape;
  const std::vector<std::string>& names;
  const PlacementSearchOptions& options;
  PlacementSearchResult& best;
  long& steps;

  Search(const topo::Cluster& cluster, const topo::LinkGraph& graph, const std::vector<int>& shape,
         const std::vector<std::string>& names, const PlacementSearchOptions& options,
         PlacementSearchResult& best, long& steps, std::vector<int> fill)
      : cluster(cluster),
        graph(graph),
        shape(shape),
        names(names),
        options(options),
        best(best),
        steps(steps),
        chips(cluster.chips_per_node()),
        fill(std::move(fill)),
        order(chips, 0) {}

  int chips = 0;
  std::vector<int> fill;                  // fill order, outermost first
  std::vector<int> fill_index;            // mesh position -> fill index q
  std::vector<ChipMask> constraints;      // slot sets (bit = slot) that must map to connected chips
  std::vector<std::vector<int>> done_at;  // slot -> constraints whose highest slot it is
  std::vector<std::vector<int>> open_at;  // slot -> constraints still open after it
  std::vector<std::vector<int>> member_of;  // slot -> constraints that hold it
  std::vector<int> order;                   // slot -> chip
  int solutions = 0;
  bool stop = false;
  // TP groups spread over several chips: fixed by the fill order, whatever the chip order.
  int tp_off_chip = 0;

  int rank_at(int pos) const {
    const int q = fill_index[pos];
    const int per_node = cluster.ranks_per_node(), k = cluster.ranks_per_chip();
    return (q / per_node) * per_node + order[(q % per_node) / k] * k + q % k;
  }

  ChipMask image(ChipMask slots) const {
    ChipMask out = 0;
    for (; slots; slots &= slots - 1) out |= ChipMask{1} << order[std::countr_zero(slots)];
    return out;
  }

  // Builds the constraints; false when some group can never be routed (unequal node shares).
  bool prepare() {
    const int dims = static_cast<int>(shape.size());
    const int total = cluster.world();
    std::vector<int> fill_stride(dims);
    int stride = 1;
    for (int i = dims - 1; i >= 0; --i) {
      fill_stride[fill[i]] = stride;
      stride *= shape[fill[i]];
    }
    fill_index.assign(total, 0);
    for (int pos = 0; pos < total; ++pos) {
      int rest = pos, q = 0;
      for (int d = dims - 1; d >= 0; --d) {
        q += (rest % shape[d]) * fill_stride[d];
        rest /= shape[d];
      }
      fill_index[pos] = q;
    }
    // Groups in slot terms, per node.
    const int per_node = cluster.ranks_per_node(), k = cluster.ranks_per_chip();
    std::set<ChipMask> unique;
    topo::Mesh positions(cluster, shape, names);  // row-major: rank == position
    for (int axis = 0; axis < dims; ++axis) {
      for (const auto& group : positions.groups(axis)) {
        std::map<int, std::pair<ChipMask, int>> per;  // node -> (slots, ranks)
        for (int pos : group) {
          const int q = fill_index[pos];
          auto& entry = per[q / per_node];
          entry.first |= ChipMask{1} << ((q % per_node) / k);
          entry.second += 1;
        }
        const int share = per.begin()->second.second;
        for (auto& [node, entry] : per) {
          if (entry.second != share) return false;
          if (std::popcount(entry.first) > 1) unique.insert(entry.first);
        }
        if (positions.role(axis) == topo::AxisRole::kTensor &&
            (per.size() > 1 || std::popcount(per.begin()->second.first) > 1)) {
          ++tp_off_chip;
        }
      }
    }
    constraints.assign(unique.begin(), unique.end());
    done_at.assign(chips, {});
    open_at.assign(chips, {});
    member_of.assign(chips, {});
    for (int i = 0; i < static_cast<int>(constraints.size()); ++i) {
      for (ChipMask m = constraints[i]; m; m &= m - 1) member_of[std::countr_zero(m)].push_back(i);
      const int lo = std::countr_zero(constraints[i]);
      const int hi = 63 - std::countl_zero(constraints[i]);
      done_at[hi].push_back(i);
      for (int s = lo; s < hi; ++s) open_at[s].push_back(i);
    }
    return true;
  }

  bool feasible(int slot, ChipMask used) const {
    for (int i : done_at[slot]) {
      if (!graph.connected(image(constraints[i]))) return false;
    }
    const ChipMask all = chips == 64 ? ~ChipMask{0} : (ChipMask{1} << chips) - 1;
    const ChipMask free_chips = all & ~used;
    for (int i : open_at[slot]) {
      const ChipMask placed_slots = constraints[i] & ((ChipMask{2} << slot) - 1);
      const ChipMask placed = image(placed_slots);
      // The placed chips must still be able to join through free chips.
      auto parts = graph.components(placed | free_chips);
      int holding = 0;
      for (const auto& part : parts) {
        if (topo::LinkGraph::mask_of(part) & placed) ++holding;
      }
      if (holding > 1) return false;
    }
    return true;
  }

  // Every group of the current (complete) chip order is routable.
  bool constraints_hold() const {
    for (ChipMask c : constraints) {
      if (!graph.connected(image(c))) return false;
    }
    return true;
  }

  struct Score {
    int off = 0;
    hw::Seconds cost = -1;  // -1: some group is not routable
    bool better_than(const Score& o) const {
      return o.cost < 0 || (cost >= 0 && (off < o.off || (off == o.off && cost < o.cost)));
    }
  };

  Score score() const {
    std::vector<int> placement(cluster.world());
    for (int pos = 0; pos < cluster.world(); ++pos) placement[pos] = rank_at(pos);
    Score out;
    out.cost =
        placement_cost(cluster, graph, topo::Mesh(cluster, shape, names, std::move(placement)),
                       options.cost_bytes, &out.off);
    return out;
  }

  // The best few routable chip orders seen by evaluate(), the starts of improve().
  static constexpr size_t kStarts = 4;
  std::vector<std::pair<Score, std::vector<int>>> starts;

  void remember(const Score& sc) {
    for (const auto& [s, o] : starts) {
      if (o == order) return;
    }
    starts.emplace_back(sc, order);
    std::sort(starts.begin(), starts.end(),
              [](const auto& a, const auto& b) { return a.first.better_than(b.first); });
    if (starts.size() > kStarts) starts.pop_back();
  }

  // Local search from each remembered order: swap the chips of two slots while every group
  // stays routable and the score (TP groups off chip, then cost) drops; repeat until no swap
  // helps. It uses nothing but the link graph and the cost model, so it works for any grid.
  void improve() {
    const auto seeds = starts;
    for (const auto& [start_score, start] : seeds) {
      order = start;
      Score current = start_score;
      bool improved = true;
      while (improved && !stop) {
        improved = false;
        for (int i = 0; i < chips && !stop; ++i) {
          for (int j = i + 1; j < chips; ++j) {
            if (++steps > options.max_steps) {
              stop = true;
              break;
            }
            std::swap(order[i], order[j]);
            if (constraints_hold()) {
              const Score next = score();
              if (next.better_than(current)) {
                current = next;
                improved = true;
                continue;
              }
            }
            std::swap(order[i], order[j]);
          }
        }
      }
      evaluate();
    }
  }

  // Scores the current chip order; keeps it when it beats the best so far.
  void evaluate() {
    ++solutions;
    std::vector<int> placement(cluster.world());
    for (int pos = 0; pos < cluster.world(); ++pos) placement[pos] = rank_at(pos);
    topo::Mesh mesh(cluster, shape, names, placement);
    int off = 0;
    const hw::Seconds cost = placement_cost(cluster, graph, mesh, options.cost_bytes, &off);
    if (cost < 0) return;  // not routable (a structured order can fail; the DFS's cannot)
    remember(Score{off, cost});
    ++best.solutions;
    if (!best.found || off < best.tp_groups_off_chip ||
        (off == best.tp_groups_off_chip && cost < best.cost)) {
      best.found = true;
      best.placement = std::move(placement);
      best.chip_order = order;
      best.fill_order = fill;
      best.tp_groups_off_chip = off;
      best.cost = cost;
      best.is_default = mesh.is_row_major();
    }
  }

  void dfs(int slot, ChipMask used) {
    if (stop) return;
    if (slot == chips) {
      evaluate();
      if (solutions >= options.max_solutions) stop = true;
      return;
    }
    // Candidates, most compact first: by the number of links to chips already placed in the
    // groups this slot belongs to (compact groups have more links, so more bandwidth), then
    // neighbours of the previous slot's chip, then ascending.
    std::vector<int> candidates;
    if (slot == 0) {
      candidates.push_back(0);
    } else {
      const ChipMask near = graph.neighbor_mask(order[slot - 1]) & ~used;
      for (int chip : topo::LinkGraph::chips_of(near)) candidates.push_back(chip);
      for (int chip = 0; chip < chips; ++chip) {
        if (!((used >> chip) & 1) && !((near >> chip) & 1)) candidates.push_back(chip);
      }
      const ChipMask before = (ChipMask{1} << slot) - 1;
      std::vector<int> links(chips, 0);
      for (int chip : candidates) {
        for (int i : member_of[slot]) {
          links[chip] += std::popcount(graph.neighbor_mask(chip) & image(constraints[i] & before));
        }
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int a, int b) { return links[a] > links[b]; });
    }
    for (int chip : candidates) {
      if (++steps > options.max_steps) {
        stop = true;
        return;
      }
      order[slot] = chip;
      const ChipMask now = used | (ChipMask{1} << chip);
      if (feasible(slot, now)) dfs(slot + 1, now);
      if (stop) return;
    }
  }
};

// Chip orders with known good structure, tried before the depth-first search. They are generic
// in the grid (rows x cols, any size): row-major, column-major, snake (boustrophedon, a
// Hamiltonian path of the grid), the mirrored-row order of NxD's LOGIC2 (rows 0, R-1, 1, R-2,
// ...), and chips paired down the columns of adjacent row pairs. No order is written out for
// a particular mesh; the search proper is the depth-first part.
std::vector<std::vector<int>> structured_orders(const hw::InstanceSpec& spec) {
  const int rows = spec.grid_rows, cols = spec.grid_cols;
  auto chip = [&](int r, int c) { return r * cols + c; };
  std::vector<int> mirrored_rows;
  for (int i = 0; i < (rows + 1) / 2; ++i) {
    mirrored_rows.push_back(i);
    if (rows - 1 - i != i) mirrored_rows.push_back(rows - 1 - i);
  }
  std::vector<std::vector<int>> out(5);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      out[0].push_back(chip(r, c));
      out[2].push_back(chip(r, r % 2 ? cols - 1 - c : c));
      out[3].push_back(chip(mirrored_rows[r], c));
    }
  for (int c = 0; c < cols; ++c)
    for (int r = 0; r < rows; ++r) out[1].push_back(chip(r, c));
  for (int i = 0; i + 1 < rows; i += 2)
    for (int c = 0; c < cols; ++c) {
      out[4].push_back(chip(i, c));
      out[4].push_back(chip(i + 1, c));
    }
  std::vector<std::vector<int>> valid;
  for (auto& order : out) {
    if (static_cast<int>(order.size()) == spec.chips) valid.push_back(std::move(order));
  }
  return valid;
}

}  // namespace

hw::Seconds placement_cost(const topo::Cluster& cluster, const topo::LinkGraph& graph,
                           const topo::Mesh& mesh, hw::Bytes cost_bytes, int* tp_groups_off_chip) {
  const hw::Bytes sizes[] = {cost_bytes};
  MeshReport report = analyze_mesh(cluster, graph, mesh, sizes);
  if (tp_groups_off_chip) *tp_groups_off_chip = count_tp_off_chip(cluster, mesh);
  if (!report.routable) return -1;
  hw::Seconds total = 0;
  for (const AxisReport& axis : report.axes) total += axis.estimates[0].estimate.seconds;
  return total;
}

PlacementSearchResult search_placement(const topo::Cluster& cluster, const topo::LinkGraph& graph,
                                       const std::vector<int>& shape,
                                       const std::vector<std::string>& names,
                                       const PlacementSearchOptions& options) {
  PlacementSearchResult best;
  topo::Mesh row_major(cluster, shape, names);  // validates shape and names
  int off = 0;
  const hw::Seconds default_cost =
      placement_cost(cluster, graph, row_major, options.cost_bytes, &off);
  best.default_routable = default_cost >= 0;
  if (best.default_routable) {
    best.found = true;
    best.is_default = true;
    best.placement = row_major.placement();
    best.tp_groups_off_chip = off;
    best.cost = default_cost;
    for (int c = 0; c < cluster.chips_per_node(); ++c) best.chip_order.push_back(c);
    for (int d = 0; d < row_major.dims(); ++d) best.fill_order.push_back(d);
  }

  std::vector<std::vector<int>> fills;
  std::vector<int> given(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) given[d] = static_cast<int>(d);
  fills.push_back(given);
  for (size_t d = 0; d + 1 < shape.size(); ++d) {
    if (row_major.role(static_cast<int>(d)) == topo::AxisRole::kTensor) {
      std::vector<int> tp_last = given;
      tp_last.erase(tp_last.begin() + d);
      tp_last.push_back(static_cast<int>(d));
      fills.insert(fills.begin(), tp_last);  // TP inside a chip first
      break;
    }
  }

  long steps = 0;
  bool any_prepared = false;
  for (const auto& fill : fills) {
    Search search(cluster, graph, shape, names, options, best, steps, fill);
    if (!search.prepare()) continue;
    any_prepared = true;
    // The first criterion is TP groups off chip; a fill order that spreads more of them than
    // the best found cannot win, whatever its chip order.
    if (best.found && search.tp_off_chip > best.tp_groups_off_chip) continue;
    if (options.structured_orders) {
      for (const auto& order : structured_orders(cluster.spec())) {
        search.order = order;
        search.evaluate();
      }
    }
    search.solutions = 0;
    search.dfs(0, 0);
    search.stop = false;
    search.improve();
  }
  best.steps = steps;
  if (!best.found) {
    best.message =
        !any_prepared
            ? "no placement of the mesh " + row_major.describe() + " on " + cluster.describe() +
                  " gives every group the same number of ranks on each node; make the axes that "
                  "span "
                  "nodes divide the node count"
            : "no placement of the mesh " + row_major.describe() + " on " + cluster.describe() +
                  " makes every group routable (searched " + std::to_string(steps) +
                  " chip placements); reduce TP to the ranks of one chip (" +
                  std::to_string(cluster.ranks_per_chip()) + ") or change the mesh shape";
  }
  return best;
}

}  // namespace vtrn::coll
