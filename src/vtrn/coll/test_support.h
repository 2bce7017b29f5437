// Independent references for the coll tests: the 4 x 4 chip grid with wraparound links of
// "Best practices for training on AWS Neuron", written out here from the guide's text instead of
// using topo::LinkGraph.
#pragma once

#include <set>
#include <vector>

namespace vtrn::coll::testing {

/// The guide: "The chip IDs occupy this grid, with wraparound links on both axes", chip = 4*row +
/// col.
inline bool guide_grid_adjacent(int a, int b) {
  const int dr = ((a / 4) - (b / 4) + 4) % 4, dc = ((a % 4) - (b % 4) + 4) % 4;
  return (dr == 0 && (dc == 1 || dc == 3)) || (dc == 0 && (dr == 1 || dr == 3));
}

/// Whether |chips| are connected using only links between members.
inline bool guide_grid_connected(const std::set<int>& chips) {
  if (chips.empty()) return true;
  std::set<int> seen = {*chips.begin()};
  std::vector<int> stack = {*chips.begin()};
  while (!stack.empty()) {
    const int a = stack.back();
    stack.pop_back();
    for (int b : chips) {
      if (!seen.count(b) && guide_grid_adjacent(a, b)) {
        seen.insert(b);
        stack.push_back(b);
      }
    }
  }
  return seen.size() == chips.size();
}

/// Chips (node-local) of |ranks| at |ranks_per_chip| ranks per chip on one node.
inline std::set<int> chips_of(const std::vector<int>& ranks, int ranks_per_chip) {
  std::set<int> out;
  for (int r : ranks) out.insert(r / ranks_per_chip);
  return out;
}

inline std::vector<int> range(int start, int stop, int step = 1) {
  std::vector<int> out;
  for (int i = start; i < stop; i += step) out.push_back(i);
  return out;
}

}  // namespace vtrn::coll::testing
