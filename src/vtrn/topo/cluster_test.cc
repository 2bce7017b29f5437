// Rank placement against "Best practices for training on AWS Neuron": "At LNC2, rank = 4 * chip_id
// + logical_core_position".
#include "vtrn/topo/cluster.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace vtrn::topo {
namespace {

TEST(ClusterTest, Trn2Lnc2RowMajor) {
  Cluster cluster("trn2.48xlarge", 2, 1);
  EXPECT_EQ(cluster.world(), 64);
  EXPECT_EQ(cluster.ranks_per_chip(), 4);
  for (int chip = 0; chip < 16; ++chip) {
    for (int core = 0; core < 4; ++core) {
      EXPECT_EQ(cluster.locate(4 * chip + core), (RankLocation{0, chip, core}));
      EXPECT_EQ(cluster.rank_of({0, chip, core}), 4 * chip + core);
    }
  }
  // The guide: "Chip 3 (row 0, column 3) contains ranks 12 through 15; chip 12 (row 3, column 0)
  // contains ranks 48 through 51."
  EXPECT_EQ(cluster.chip_coord(0, 3), (ChipCoord{0, 3, 0}));
  EXPECT_EQ(cluster.chip_coord(0, 12), (ChipCoord{3, 0, 0}));
  EXPECT_EQ(cluster.locate(12).chip, 3);
  EXPECT_EQ(cluster.locate(15).chip, 3);
  EXPECT_EQ(cluster.locate(48).chip, 12);
  EXPECT_EQ(cluster.locate(51).chip, 12);
}

TEST(ClusterTest, DefaultLncIsTwo) { EXPECT_EQ(Cluster("trn2.48xlarge").lnc(), 2); }

TEST(ClusterTest, Lnc1HostsEightRanksPerChip) {
  // trn2_lnc1.png: device d hosts logical cores 8d .. 8d+7.
  Cluster cluster("trn2.48xlarge", 1, 1);
  EXPECT_EQ(cluster.world(), 128);
  EXPECT_EQ(cluster.locate(8 * 5 + 7), (RankLocation{0, 5, 7}));
}

TEST(ClusterTest, NodesAreOutermost) {
  // The guide's (4, 16, 4) mesh: rank = 64 * replicate + ..., one replicate index per node.
  Cluster cluster("trn2.48xlarge", 2, 4);
  EXPECT_EQ(cluster.world(), 256);
  EXPECT_EQ(cluster.locate(64), (RankLocation{1, 0, 0}));
  EXPECT_EQ(cluster.locate(192 + 61), (RankLocation{3, 15, 1}));
  EXPECT_EQ(cluster.global_chip(64 + 4), 17);
}

TEST(ClusterTest, UltraServerZ) {
  Cluster cluster("trn2u.48xlarge", 2, 8);
  EXPECT_EQ(cluster.chip_coord(5, 6), (ChipCoord{1, 2, 1}));
  EXPECT_EQ(cluster.ultraserver_of(3), 0);
  EXPECT_EQ(cluster.ultraserver_of(4), 1);
}

TEST(ClusterTest, Trn1OneRankPerPhysicalCore) {
  Cluster cluster("trn1.32xlarge");
  EXPECT_EQ(cluster.lnc(), 0);
  EXPECT_EQ(cluster.world(), 32);
  EXPECT_EQ(cluster.describe(), "1 x trn1.32xlarge, no LNC, 32 ranks");
}

TEST(ClusterTest, BadInput) {
  EXPECT_THROW(Cluster("trn2.48xlarge", 2, 0), std::invalid_argument);
  EXPECT_THROW(Cluster("trn2.48xlarge", 3, 1), std::invalid_argument);
  EXPECT_THROW(Cluster("p5.48xlarge"), std::invalid_argument);
  try {
    Cluster("trn2.3xlarge", 2, 2);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("trn2.3xlarge has no documented EFA bandwidth"),
              std::string::npos);
  }
  try {
    Cluster("trn2.48xlarge").locate(64);
    FAIL();
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(),
                 "rank 64 is outside the world of 64 ranks (1 x trn2.48xlarge, LNC2, 64 ranks)");
  }
}

TEST(ClusterTest, NodeAndWorldCaps) {
  // The caps (cluster.h): 4,096 nodes; 4,096 trn2 nodes at LNC1 hold 4096 * 128 = 524,288 ranks,
  // under the 2^20 world cap.
  EXPECT_EQ(Cluster("trn2.48xlarge", 1, 4096).world(), 524288);
  try {
    Cluster("trn2.48xlarge", 2, 4097);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(
        e.what(),
        "nodes 4097 is out of range: vtrn models 1 to 4096 nodes (and at most 1048576 ranks); "
        "give a node count in that range");
  }
  EXPECT_THROW(Cluster("trn2.48xlarge", 2, 100000000), std::invalid_argument);
  EXPECT_THROW(Cluster("trn2.48xlarge", 2, -1), std::invalid_argument);
  EXPECT_EQ(Cluster::nodes_error(4096), "");
  EXPECT_NE(Cluster::nodes_error(3000000000LL).find("nodes 3000000000 is out of range"),
            std::string::npos);
}

}  // namespace
}  // namespace vtrn::topo
