#include "vtrn/topo/link_graph.h"

#include <algorithm>
#include <bit>
#include <set>
#include <stdexcept>

namespace vtrn::topo {

using hw::ChipTopology;
using hw::UltraServerFabric;

LinkGraph::LinkGraph(const Cluster& cluster) : cluster_(cluster) {
  const hw::InstanceSpec& spec = cluster.spec();
  const int n = spec.chips;
  if (n > 64) throw std::invalid_argument("LinkGraph supports at most 64 chips per node");
  neighbors_.assign(n, {});
  masks_.assign(n, 0);
  auto link = [&](int a, int b) {
    if (a != b) masks_[a] |= ChipMask{1} << b;
  };
  for (int chip = 0; chip < n; ++chip) {
    switch (spec.topology) {
      case ChipTopology::kSingleChip:
        break;
      case ChipTopology::kSwitch:
        for (int other = 0; other < n; ++other) link(chip, other);
        break;
      case ChipTopology::kTorus2D: {
        const int rows = spec.grid_rows, cols = spec.grid_cols;
        const int r = chip / cols, c = chip % cols;
        link(chip, ((r + 1) % rows) * cols + c);
        link(chip, ((r + rows - 1) % rows) * cols + c);
        link(chip, r * cols + (c + 1) % cols);
        link(chip, r * cols + (c + cols - 1) % cols);
        break;
      }
    }
  }
  for (int chip = 0; chip < n; ++chip) neighbors_[chip] = chips_of(masks_[chip]);
}

ChipMask LinkGraph::mask_of(std::span<const int> chips) {
  ChipMask mask = 0;
  for (int chip : chips) mask |= ChipMask{1} << chip;
  return mask;
}

std::vector<int> LinkGraph::chips_of(ChipMask mask) {
  std::vector<int> out;
  while (mask) {
    out.push_back(std::countr_zero(mask));
    mask &= mask - 1;
  }
  return out;
}

std::vector<std::vector<int>> LinkGraph::components(ChipMask chips) const {
  std::vector<std::vector<int>> out;
  ChipMask left = chips;
  while (left) {
    ChipMask seen = left & (~left + 1);  // lowest chip
    ChipMask frontier = seen;
    while (frontier) {
      ChipMask next = 0;
      for (int chip : chips_of(frontier)) next |= masks_[chip];
      next &= chips & ~seen;
      seen |= next;
      frontier = next;
    }
    out.push_back(chips_of(seen));
    left &= ~seen;
  }
  return out;
}

bool LinkGraph::connected(ChipMask chips) const { return components(chips).size() <= 1; }

int LinkGraph::induced_degree(int chip, ChipMask chips) const {
  return std::popcount(masks_[chip] & chips & ~(ChipMask{1} << chip));
}

double LinkGraph::mean_hops(ChipMask chips) const {
  const std::vector<int> members = chips_of(chips);
  if (members.size() < 2) return 0.0;
  long total = 0;
  for (int src : members) {
    ChipMask seen = ChipMask{1} << src, frontier = seen;
    for (int dist = 1; frontier; ++dist) {
      ChipMask next = 0;
      for (int chip : chips_of(frontier)) next |= masks_[chip];
      next &= chips & ~seen;
      total += static_cast<long>(std::popcount(next)) * dist;
      seen |= next;
      frontier = next;
    }
  }
  const double pairs = static_cast<double>(members.size()) * (members.size() - 1);
  return total / pairs;
}

bool LinkGraph::nodes_joined(std::span<const int> nodes) const {
  std::set<int> unique(nodes.begin(), nodes.end());
  if (unique.size() <= 1) return true;
  const hw::InstanceSpec& spec = cluster_.spec();
  if (spec.ultraserver_fabric == UltraServerFabric::kNone) return false;
  const int server = cluster_.ultraserver_of(*unique.begin());
  for (int node : unique) {
    if (cluster_.ultraserver_of(node) != server) return false;
  }
  if (spec.ultraserver_fabric == UltraServerFabric::kSwitch) return true;
  // Z ring of ultraserver_nodes positions; connected using only the members' positions.
  const int ring = spec.ultraserver_nodes;
  std::vector<bool> member(ring, false);
  for (int node : unique) member[node % ring] = true;
  std::vector<bool> seen(ring, false);
  std::vector<int> stack = {*unique.begin() % ring};
  seen[stack.back()] = true;
  size_t reached = 1;
  while (!stack.empty()) {
    const int z = stack.back();
    stack.pop_back();
    for (int next : {(z + 1) % ring, (z + ring - 1) % ring}) {
      if (member[next] && !seen[next]) {
        seen[next] = true;
        ++reached;
        stack.push_back(next);
      }
    }
  }
  return reached == unique.size();
}

std::vector<Link> LinkGraph::links() const {
  std::vector<Link> out;
  const int n = chips();
  const int nodes = cluster_.nodes();
  for (int node = 0; node < nodes; ++node) {
    for (int a = 0; a < n; ++a) {
      for (int b : neighbors_[a]) {
        if (a < b) out.push_back({node * n + a, node * n + b, LinkKind::kNeuronLink});
      }
    }
  }
  const hw::InstanceSpec& spec = cluster_.spec();
  if (spec.ultraserver_fabric == UltraServerFabric::kZRing) {
    const int ring = spec.ultraserver_nodes;
    std::set<std::pair<int, int>> pairs;
    for (int node = 0; node < nodes; ++node) {
      const int base = node - node % ring;
      for (int next : {base + (node % ring + 1) % ring, base + (node % ring + ring - 1) % ring}) {
        if (next != node && next < nodes)
          pairs.insert({std::min(node, next), std::max(node, next)});
      }
    }
    for (auto [x, y] : pairs) {
      for (int chip = 0; chip < n; ++chip)
        out.push_back({x * n + chip, y * n + chip, LinkKind::kNeuronLinkZ});
    }
  }
  return out;
}

}  // namespace vtrn::topo
