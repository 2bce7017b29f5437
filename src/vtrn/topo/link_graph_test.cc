// The NeuronLink graph against the chip grid of "Best practices for training on AWS Neuron": "The
// chip IDs occupy this grid, with wraparound links on both axes" (4 x 4, chip = 4 * row + col).
#include "vtrn/topo/link_graph.h"

#include <gtest/gtest.h>

#include <vector>

namespace vtrn::topo {
namespace {

using Chips = std::vector<int>;

TEST(LinkGraphTest, Trn2TorusNeighbours) {
  Cluster cluster("trn2.48xlarge");
  LinkGraph graph(cluster);
  EXPECT_EQ(graph.neighbors(0), (Chips{1, 3, 4, 12}));  // row 0 ring, column 0 ring
  EXPECT_EQ(graph.neighbors(5), (Chips{1, 4, 6, 9}));
  EXPECT_EQ(graph.neighbors(15), (Chips{3, 11, 12, 14}));
  // The guide: "Rank 0 on chip 0 and rank 8 on chip 2 need an intermediate hop through chip 1 or
  // chip 3."
  EXPECT_FALSE(graph.adjacent(0, 2));
  EXPECT_TRUE(graph.adjacent(0, 1));
  EXPECT_TRUE(graph.adjacent(0, 3));
  // The guide: "Pairs (0,12) through (3,15) use wraparound links."
  for (int c = 0; c < 4; ++c) EXPECT_TRUE(graph.adjacent(c, 12 + c));
  EXPECT_EQ(graph.links().size(), 32u);  // 16 chips x 4 links / 2
}

TEST(LinkGraphTest, BestPracticesDpGroupIsDisconnected) {
  LinkGraph graph(Cluster("trn2.48xlarge"));
  // DP [0, 8, ..., 56] at LNC2 sits on the even chips: the two columns 0 and 2.
  const Chips dp_chips = {0, 2, 4, 6, 8, 10, 12, 14};
  auto parts = graph.components(LinkGraph::mask_of(dp_chips));
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0], (Chips{0, 4, 8, 12}));
  EXPECT_EQ(parts[1], (Chips{2, 6, 10, 14}));
  // The guide: "DP groups select one core per chip from the connected regions 0-7 and 8-15."
  EXPECT_TRUE(graph.connected(LinkGraph::mask_of(Chips{0, 1, 2, 3, 4, 5, 6, 7})));
  EXPECT_TRUE(graph.connected(LinkGraph::mask_of(Chips{8, 9, 10, 11, 12, 13, 14, 15})));
}

TEST(LinkGraphTest, DegreesAndHops) {
  LinkGraph graph(Cluster("trn2.48xlarge"));
  const ChipMask all = 0xFFFF;
  EXPECT_EQ(graph.induced_degree(0, all), 4);
  // Rows 0-1 (chips 0..7): two row links plus the one column link to the other row.
  EXPECT_EQ(graph.induced_degree(0, 0xFF), 3);
  // 4x4 torus: per axis the ring distances are 0,1,2,1 (sum 4); over the 16 chips the
  // distances from one chip sum to 4*4 + 4*4 = 32, over 15 peers.
  EXPECT_DOUBLE_EQ(graph.mean_hops(all), 32.0 / 15.0);
  EXPECT_DOUBLE_EQ(graph.mean_hops(LinkGraph::mask_of(Chips{0, 1})), 1.0);
  // Path 0-1-2 inside the set {0,1,2}: hops 1,2,1 each way -> 8/6.
  EXPECT_DOUBLE_EQ(graph.mean_hops(LinkGraph::mask_of(Chips{0, 1, 2})), 8.0 / 6.0);
}

TEST(LinkGraphTest, SwitchJoinsEveryPair) {
  LinkGraph graph(Cluster("trn3.gen1-server"));
  EXPECT_TRUE(graph.adjacent(0, 15));
  EXPECT_TRUE(graph.connected(LinkGraph::mask_of(Chips{0, 2, 8, 10})));
  EXPECT_EQ(graph.links().size(), 120u);  // 16 * 15 / 2
}

TEST(LinkGraphTest, SingleChipHasNoLinks) {
  LinkGraph graph(Cluster("trn2.3xlarge"));
  EXPECT_EQ(graph.chips(), 1);
  EXPECT_TRUE(graph.neighbors(0).empty());
}

TEST(LinkGraphTest, UltraServerZRing) {
  Cluster cluster("trn2u.48xlarge", 2, 8);
  LinkGraph graph(cluster);
  EXPECT_TRUE(graph.nodes_joined(std::vector<int>{0, 1}));
  EXPECT_TRUE(graph.nodes_joined(std::vector<int>{3, 0}));   // ring wraps
  EXPECT_FALSE(graph.nodes_joined(std::vector<int>{0, 2}));  // needs node 1 or 3
  EXPECT_TRUE(graph.nodes_joined(std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(graph.nodes_joined(std::vector<int>{3, 4}));  // two UltraServers: EFA
  // 8 nodes x 32 torus links + 2 UltraServers x 4 ring edges x 16 chips.
  EXPECT_EQ(graph.links().size(), 8u * 32 + 2 * 4 * 16);
  EXPECT_FALSE(LinkGraph(Cluster("trn2.48xlarge", 2, 2)).nodes_joined(std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace vtrn::topo
