// Placement search on layouts of trn2.48xlarge nodes (TP8 x FSDP8, TP32 x FSDP2, TP16 x FSDP8
// at LNC1, ...). Found placements are checked against the chip grid of "Best
// practices for training on AWS Neuron" (test_support.h), not against topo::LinkGraph.
#include "vtrn/coll/placement_search.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "vtrn/coll/test_support.h"

namespace vtrn::coll {
namespace {

using testing::chips_of;
using testing::guide_grid_connected;

// Every group of every axis sits on chips that are connected on the guide's grid.
void ExpectRoutableOnGuideGrid(const topo::Cluster& cluster, const PlacementSearchResult& result,
                               const std::vector<int>& shape,
                               const std::vector<std::string>& names) {
  ASSERT_TRUE(result.found) << result.message;
  std::vector<int> sorted = result.placement;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < cluster.world(); ++i) ASSERT_EQ(sorted[i], i);  // a permutation
  topo::Mesh mesh(cluster, shape, names, result.placement);
  for (int axis = 0; axis < mesh.dims(); ++axis)
    for (const auto& group : mesh.groups(axis))
      EXPECT_TRUE(guide_grid_connected(chips_of(group, cluster.ranks_per_chip()))) << names[axis];
}

TEST(PlacementSearchTest, Tp8Fsdp8AtLnc2) {
  topo::Cluster cluster("trn2.48xlarge", 2, 1);
  topo::LinkGraph graph(cluster);
  PlacementSearchResult result = search_placement(cluster, graph, {8, 8}, {"dp", "tp"});
  EXPECT_FALSE(result.default_routable);
  EXPECT_FALSE(result.is_default);
  ExpectRoutableOnGuideGrid(cluster, result, {8, 8}, {"dp", "tp"});
  // TP8 cannot fit a chip (4 ranks): every TP group takes a pair of linked chips.
  EXPECT_EQ(result.tp_groups_off_chip, 8);
  topo::Mesh mesh(cluster, {8, 8}, {"dp", "tp"}, result.placement);
  for (const auto& group : mesh.groups(1)) EXPECT_EQ(chips_of(group, 4).size(), 2u);
  // At least as good as the guide's chip-pair mesh, its own answer (which the search does not
  // contain: it has to find one as good).
  const int pairs[8][2] = {{0, 12}, {1, 13}, {2, 14}, {3, 15}, {4, 8}, {5, 9}, {6, 10}, {7, 11}};
  std::vector<int> chip_pairs;
  for (auto& pair : pairs)
    for (int chip : pair)
      for (int core = 0; core < 4; ++core) chip_pairs.push_back(4 * chip + core);
  const hw::Seconds chip_pairs_cost =
      placement_cost(cluster, graph, topo::Mesh(cluster, {8, 8}, {"dp", "tp"}, chip_pairs),
                     PlacementSearchOptions{}.cost_bytes);
  ASSERT_GT(chip_pairs_cost, 0);
  EXPECT_LE(result.cost, chip_pairs_cost);
}

TEST(PlacementSearchTest, DepthFirstSearchAloneFindsTheLayouts) {
  // Without the structured chip orders, only the depth-first search and the local search:
  // each of these layouts still gets a routable placement, TP8 x FSDP8 one as fast as the
  // guide's chip pairs.
  PlacementSearchOptions dfs_only;
  dfs_only.structured_orders = false;
  struct Case {
    int lnc;
    std::vector<int> shape;
    int tp_chips;  // whole chips per TP group: TP8 and TP32 at LNC2 (4 ranks a chip), TP16 at LNC1
                   // (8)
  };
  for (const Case& c : {Case{2, {8, 8}, 2}, Case{2, {2, 32}, 8}, Case{1, {8, 16}, 2}}) {
    topo::Cluster cluster("trn2.48xlarge", c.lnc, 1);
    topo::LinkGraph graph(cluster);
    PlacementSearchResult result =
        search_placement(cluster, graph, c.shape, {"dp", "tp"}, dfs_only);
    ExpectRoutableOnGuideGrid(cluster, result, c.shape, {"dp", "tp"});
    topo::Mesh mesh(cluster, c.shape, {"dp", "tp"}, result.placement);
    for (const auto& group : mesh.groups(1)) {
      EXPECT_EQ(static_cast<int>(chips_of(group, cluster.ranks_per_chip()).size()), c.tp_chips);
    }
  }
  topo::Cluster cluster("trn2.48xlarge", 2, 1);
  topo::LinkGraph graph(cluster);
  PlacementSearchResult result = search_placement(cluster, graph, {8, 8}, {"dp", "tp"}, dfs_only);
  // The guide's chip pairs' cost at 64 MiB, by hand: TP8 on 2 linked chips, KangaRing all-reduce
  //   2 * (3 * 1.5e-6 + 1/2 * 67108864 / 256e9) = 2.71144e-4;
  // DP on chips 0-7 (3 links each into the group, 768e9), Ring all-gather over 8 chips
  //   7 * 1.5e-6 + 7/8 * 67108864 / 768e9 = 1.05e-5 + 7.6458667e-5 = 8.6958667e-5.
  EXPECT_LE(result.cost, 2.71144e-4 + 8.6958666666666667e-5 + 1e-15);
}

TEST(PlacementSearchTest, Tp32Dp2AtLnc2) {
  topo::Cluster cluster("trn2.48xlarge", 2, 1);
  topo::LinkGraph graph(cluster);
  PlacementSearchResult result = search_placement(cluster, graph, {2, 32}, {"dp", "tp"});
  EXPECT_FALSE(result.default_routable);
  ExpectRoutableOnGuideGrid(cluster, result, {2, 32}, {"dp", "tp"});
}

TEST(PlacementSearchTest, Tp16Dp8AtLnc1) {
  topo::Cluster cluster("trn2.48xlarge", 1, 1);
  topo::LinkGraph graph(cluster);
  PlacementSearchResult result = search_placement(cluster, graph, {8, 16}, {"dp", "tp"});
  EXPECT_FALSE(result.default_routable);
  ExpectRoutableOnGuideGrid(cluster, result, {8, 16}, {"dp", "tp"});
}

TEST(PlacementSearchTest, KeepsARoutableDefault) {
  topo::Cluster cluster("trn2.48xlarge", 2, 1);
  topo::LinkGraph graph(cluster);
  PlacementSearchResult result = search_placement(cluster, graph, {16, 4}, {"shard", "tp"});
  EXPECT_TRUE(result.default_routable);
  ASSERT_TRUE(result.found);
  EXPECT_TRUE(result.is_default);
  EXPECT_EQ(result.tp_groups_off_chip, 0);
}

TEST(PlacementSearchTest, PutsTpInsideAChip) {
  // TP given outermost: the row-major placement spreads each TP group over 4 chips, which is
  // routable but not what the guide recommends; the search moves TP inside a chip.
  topo::Cluster cluster("trn2.48xlarge", 2, 1);
  topo::LinkGraph graph(cluster);
  PlacementSearchResult result = search_placement(cluster, graph, {4, 16}, {"tp", "shard"});
  ASSERT_TRUE(result.found);
  EXPECT_EQ(result.tp_groups_off_chip, 0);
  topo::Mesh mesh(cluster, {4, 16}, {"tp", "shard"}, result.placement);
  for (const auto& group : mesh.groups(0)) EXPECT_EQ(chips_of(group, 4).size(), 1u);
}

TEST(PlacementSearchTest, ExplainsWhenNothingWorks) {
  // 3 nodes: a TP96 group would put 64 ranks on one node and 32 on another.
  topo::Cluster cluster("trn2.48xlarge", 2, 3);
  topo::LinkGraph graph(cluster);
  PlacementSearchResult result = search_placement(cluster, graph, {2, 96}, {"dp", "tp"});
  EXPECT_FALSE(result.found);
  EXPECT_NE(result.message.find("the same number of ranks on each node"), std::string::npos)
      << result.message;
}

TEST(PlacementSearchTest, RejectsBadShape) {
  topo::Cluster cluster("trn2.48xlarge");
  topo::LinkGraph graph(cluster);
  EXPECT_THROW(search_placement(cluster, graph, {8, 4}, {"dp", "tp"}), std::invalid_argument);
}

}  // namespace
}  // namespace vtrn::coll
