// Routability against the "Check collective support" table of "Best practices for training on AWS
// Neuron" and NxD's documented supported/unsupported layouts (parallel_state.py, get_logic_chosen).
#include "vtrn/coll/route.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "vtrn/coll/test_support.h"
#include "vtrn/topo/mesh.h"

namespace vtrn::coll {
namespace {

using testing::range;
using Ranks = std::vector<int>;

struct Trn2 {
  topo::Cluster cluster{"trn2.48xlarge", 2, 1};
  topo::LinkGraph graph{cluster};
  Route route(const Ranks& ranks) const { return route_group(cluster, graph, ranks); }
  bool mesh_routable(std::vector<int> shape, std::vector<std::string> names) const {
    topo::Mesh mesh(cluster, shape, names);
    for (int axis = 0; axis < mesh.dims(); ++axis)
      for (const auto& group : mesh.groups(axis))
        if (!route(group).routable) return false;
    return true;
  }
};

TEST(RouteTest, BestPracticesTp1Fsdp64AndTp4Fsdp16AreRoutable) {
  Trn2 t;
  EXPECT_TRUE(t.mesh_routable({64}, {"shard"}));
  EXPECT_TRUE(t.mesh_routable({16, 4}, {"shard", "tp"}));
  Route tp = t.route({0, 1, 2, 3});
  EXPECT_EQ(tp.kind, RouteKind::kIntraChip);
  Route shard = t.route(range(0, 64, 4));
  EXPECT_TRUE(shard.routable);
  EXPECT_EQ(shard.kind, RouteKind::kIntraNode);
  EXPECT_EQ(shard.chips_per_node, 16);
  EXPECT_EQ(shard.ranks_per_chip, 1);
  EXPECT_FALSE(shard.whole_chips);
  EXPECT_DOUBLE_EQ(shard.node_chip_Bps, 1024e9);  // 4 links x 256 GB/s
}

TEST(RouteTest, BestPracticesDefaultTp8Fsdp8) {
  Trn2 t;
  // "TP all-reduce succeeds"
  Route tp = t.route(range(0, 8));
  EXPECT_TRUE(tp.routable);
  EXPECT_TRUE(tp.whole_chips);
  EXPECT_DOUBLE_EQ(tp.node_chip_Bps, 256e9);  // chips 0 and 1 share one link
  // "but FSDP parameter all-gather fails before training"
  Route dp = t.route(range(0, 64, 8));
  EXPECT_FALSE(dp.routable);
  EXPECT_NE(dp.error.find("failed (2) to init a collective algorithm. reason: no_hier no_mesh"),
            std::string::npos);
  EXPECT_EQ(dp.bad_node, 0);
  ASSERT_EQ(dp.disconnected.size(), 2u);
  EXPECT_EQ(dp.disconnected[0], (Ranks{0, 4, 8, 12}));
  EXPECT_EQ(dp.disconnected[1], (Ranks{2, 6, 10, 14}));
  EXPECT_EQ(dp.error,
            "ENC:enc_init_comm failed (2) to init a collective algorithm. reason: no_hier no_mesh "
            "replica-group: "
            "[0, 8, 16, 24, 32, 40, 48, 56]\n"
            "On node 0 the group's chips form 2 sets with no NeuronLink between them: chips {0, 4, "
            "8, 12} and "
            "{2, 6, 10, 14}. The collective library routes only through the group's own chips, and "
            "no chip of the "
            "group links these sets.\n"
            "Keep TP within a chip (at most 4 ranks at LNC2), or use the placement that `vtrn mesh "
            "--placement "
            "auto` finds.");
  EXPECT_FALSE(t.mesh_routable({8, 8}, {"dp", "tp"}));
}

TEST(RouteTest, BestPracticesChipPairMeshIsRoutable) {
  Trn2 t;
  const int pairs[8][2] = {{0, 12}, {1, 13}, {2, 14}, {3, 15}, {4, 8}, {5, 9}, {6, 10}, {7, 11}};
  Ranks placement;
  for (auto& pair : pairs)
    for (int chip : pair)
      for (int core = 0; core < 4; ++core) placement.push_back(4 * chip + core);
  topo::Mesh mesh(t.cluster, {8, 8}, {"dp", "tp"}, placement);
  for (int axis = 0; axis < 2; ++axis)
    for (const auto& group : mesh.groups(axis)) EXPECT_TRUE(t.route(group).routable) << axis;
  EXPECT_TRUE(t.route({0, 1, 2, 3, 48, 49, 50, 51}).routable);
  EXPECT_TRUE(t.route(range(0, 32, 4)).routable);
}

// NxD get_logic_chosen: at LNC2 4x16, 16x4, 64x1 work with contiguous ranks, 32x2 does not
// (TP32 x DP2 needs LOGIC2), 8x8 does not. Notation TP x DP.
TEST(RouteTest, NxdLnc2Table) {
  Trn2 t;
  EXPECT_TRUE(t.mesh_routable({16, 4}, {"dp", "tp"}));
  EXPECT_TRUE(t.mesh_routable({4, 16}, {"dp", "tp"}));
  EXPECT_TRUE(t.mesh_routable({1, 64}, {"dp", "tp"}));
  EXPECT_TRUE(t.mesh_routable({4, 4, 4}, {"pp", "dp", "tp"}));
  EXPECT_FALSE(
      t.mesh_routable({2, 32}, {"dp", "tp"}));  // DP [0, 32]: chips 0 and 8, two rows apart
  EXPECT_FALSE(t.mesh_routable({8, 8}, {"dp", "tp"}));
}

// NxD at LNC1 (128 ranks): 128x1, 32x4, 8x16, 4x32 work; 64x2 and 16x8 do not.
TEST(RouteTest, NxdLnc1Table) {
  topo::Cluster cluster("trn2.48xlarge", 1, 1);
  topo::LinkGraph graph(cluster);
  auto routable = [&](std::vector<int> shape) {
    topo::Mesh mesh(cluster, shape, {"dp", "tp"});
    for (int axis = 0; axis < 2; ++axis)
      for (const auto& group : mesh.groups(axis))
        if (!route_group(cluster, graph, group).routable) return false;
    return true;
  };
  EXPECT_TRUE(routable({1, 128}));
  EXPECT_TRUE(routable({4, 32}));
  EXPECT_TRUE(routable({16, 8}));
  EXPECT_TRUE(routable({32, 4}));
  EXPECT_FALSE(routable({2, 64}));  // "0 and 64 not directly connected"
  EXPECT_FALSE(routable({8, 16}));  // "0 and 16 not connected"
}

TEST(RouteTest, AcrossNodesIsHierarchical) {
  topo::Cluster cluster("trn2.48xlarge", 2, 4);
  topo::LinkGraph graph(cluster);
  // The guide: "the replicate group [0, 64, 128, 192] synchronizes matching shards across nodes".
  Route replicate = route_group(cluster, graph, Ranks{0, 64, 128, 192});
  EXPECT_TRUE(replicate.routable);
  EXPECT_EQ(replicate.kind, RouteKind::kHierarchical);
  EXPECT_EQ(replicate.nodes, 4);
  EXPECT_FALSE(replicate.nodes_joined);
  Route uneven = route_group(cluster, graph, Ranks{0, 1, 64});
  EXPECT_FALSE(uneven.routable);
  EXPECT_NE(uneven.error.find("no_hier no_mesh replica-group: [0, 1, 64]"), std::string::npos);
  EXPECT_NE(uneven.error.find("The group has 2 ranks on node 0 but 1 on node 1"),
            std::string::npos);
  // A node's part that is not connected makes the whole group unroutable.
  Route split = route_group(cluster, graph, Ranks{64, 72, 0, 8});
  EXPECT_FALSE(split.routable);
  EXPECT_EQ(split.bad_node, 0);
}

TEST(RouteTest, UltraServerNodesJoined) {
  topo::Cluster cluster("trn2u.48xlarge", 2, 4);
  topo::LinkGraph graph(cluster);
  EXPECT_TRUE(route_group(cluster, graph, Ranks{0, 64}).nodes_joined);
  EXPECT_FALSE(route_group(cluster, graph, Ranks{0, 128}).nodes_joined);
}

TEST(RouteTest, Trn3SwitchRoutesAnything) {
  topo::Cluster cluster("trn3.gen1-server");
  topo::LinkGraph graph(cluster);
  EXPECT_TRUE(route_group(cluster, graph, range(0, 64, 8)).routable);
}

TEST(RouteTest, BadGroups) {
  Trn2 t;
  EXPECT_THROW(t.route({}), std::invalid_argument);
  try {
    t.route({0, 1, 1});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "rank 1 appears twice in the group; list each rank once");
  }
  try {
    t.route({0, 64});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(
        e.what(),
        "rank 64 of the group is outside the world [0, 64) of 1 x trn2.48xlarge, LNC2, 64 ranks");
  }
}

}  // namespace
}  // namespace vtrn::coll
