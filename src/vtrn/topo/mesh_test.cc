// Meshes and groups against every mesh table of "Best practices for training on AWS Neuron".
#include "vtrn/topo/mesh.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace vtrn::topo {
namespace {

using Ranks = std::vector<int>;

std::vector<int> range(int start, int stop, int step = 1) {
  std::vector<int> out;
  for (int i = start; i < stop; i += step) out.push_back(i);
  return out;
}

// The guide's table "Layout / Nodes / Mesh shape / Mesh axis names".
TEST(MeshTest, BestPracticesLayoutTable) {
  struct Row {
    int nodes;
    std::vector<int> shape;
    std::vector<std::string> names;
  };
  const Row rows[] = {
      {1, {64}, {"shard"}},
      {1, {16, 4}, {"shard", "tp"}},
      {4, {64, 4}, {"shard", "tp"}},
      {4, {4, 16, 4}, {"replicate", "shard", "tp"}},
      {2, {2, 16, 4}, {"pp", "shard", "tp"}},
  };
  for (const Row& row : rows) {
    Cluster cluster("trn2.48xlarge", 2, row.nodes);
    Mesh mesh(cluster, row.shape, row.names);
    EXPECT_EQ(mesh.size(), 64 * row.nodes);
    EXPECT_TRUE(mesh.is_row_major());
  }
}

TEST(MeshTest, SingleNodeShardTpRowsAreChips) {
  // The guide: "For the single-node (16, 4) mesh, each row is a chip-local TP group."
  Cluster cluster("trn2.48xlarge");
  Mesh mesh(cluster, {16, 4}, {"shard", "tp"});
  auto tp = mesh.groups(mesh.axis("tp"));
  ASSERT_EQ(tp.size(), 16u);
  EXPECT_EQ(tp[0], (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(tp[1], (Ranks{4, 5, 6, 7}));
  EXPECT_EQ(tp[15], (Ranks{60, 61, 62, 63}));
  for (int chip = 0; chip < 16; ++chip)
    for (int r : tp[chip]) EXPECT_EQ(cluster.locate(r).chip, chip);
  // "FSDP joins corresponding TP positions across chips, such as [0, 4, 8, ..., 60]."
  EXPECT_EQ(mesh.groups(mesh.axis("shard"))[0], range(0, 64, 4));
}

TEST(MeshTest, HsdpRankFormula) {
  // The guide: "In the row-major (4, 16, 4) mesh, rank = 64 * replicate + 4 * shard + tp."
  Mesh mesh(Cluster("trn2.48xlarge", 2, 4), {4, 16, 4}, {"replicate", "shard", "tp"});
  for (int r = 0; r < 4; ++r)
    for (int s = 0; s < 16; ++s)
      for (int t = 0; t < 4; ++t)
        EXPECT_EQ(mesh.placement()[(r * 16 + s) * 4 + t], 64 * r + 4 * s + t);
  // "The shard group [0, 4, ..., 60] ... the replicate group [0, 64, 128, 192]".
  EXPECT_EQ(mesh.groups(1)[0], range(0, 64, 4));
  EXPECT_EQ(mesh.groups(0)[0], (Ranks{0, 64, 128, 192}));
  EXPECT_EQ(mesh.groups(0).size(), 64u);
  EXPECT_EQ(mesh.groups(1).size(), 16u);
  EXPECT_EQ(mesh.groups(2).size(), 64u);
}

TEST(MeshTest, DefaultTp8Fsdp8Groups) {
  // The guide: "TP: [0, 1, ..., 7], [8, 9, ..., 15], ...  DP: [0, 8, ..., 56], [1, 9, ..., 57],
  // ..."
  Mesh mesh(Cluster("trn2.48xlarge"), {8, 8}, {"dp", "tp"});
  auto tp = mesh.groups(1), dp = mesh.groups(0);
  EXPECT_EQ(tp[0], range(0, 8));
  EXPECT_EQ(tp[1], range(8, 16));
  EXPECT_EQ(dp[0], range(0, 64, 8));
  EXPECT_EQ(dp[1], range(1, 64, 8));
  EXPECT_EQ(mesh.role(0), AxisRole::kShard);
  EXPECT_EQ(mesh.role(1), AxisRole::kTensor);
}

TEST(MeshTest, BestPracticesChipPairPlacement) {
  // The guide's code: ranks[i] = [4 * chip + core for chip in pair for core in range(4)].
  const int pairs[8][2] = {{0, 12}, {1, 13}, {2, 14}, {3, 15}, {4, 8}, {5, 9}, {6, 10}, {7, 11}};
  std::vector<int> placement;
  for (auto& pair : pairs)
    for (int chip : pair)
      for (int core = 0; core < 4; ++core) placement.push_back(4 * chip + core);
  Mesh mesh(Cluster("trn2.48xlarge"), {8, 8}, {"dp", "tp"}, placement);
  EXPECT_FALSE(mesh.is_row_major());
  // "the first TP group becomes [0,1,2,3,48,49,50,51]. The first DP group becomes [0,4,...,28]."
  EXPECT_EQ(mesh.groups(1)[0], (Ranks{0, 1, 2, 3, 48, 49, 50, 51}));
  EXPECT_EQ(mesh.groups(0)[0], range(0, 32, 4));
}

std::string error_of(auto&& make) {
  try {
    make();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MeshTest, BadInputSaysWhatToDo) {
  Cluster cluster("trn2.48xlarge");
  EXPECT_EQ(
      error_of([&] {
        Mesh(cluster, {8, 4}, {"shard", "tp"});
      }),
      "mesh shape (8, 4) holds 32 ranks, but the world has 64 (1 x trn2.48xlarge, LNC2, 64 ranks); "
      "make the product of the shape 64 or change --nodes/--lnc");
  EXPECT_EQ(error_of([&] {
              Mesh(cluster, {16, 4}, {"shard", "cp"});
            }),
            "unknown mesh axis name 'cp'; use one of pp, replicate, shard, tp, dp, fsdp");
  EXPECT_EQ(error_of([&] {
              Mesh(cluster, {16, 4}, {"tp", "tp"});
            }),
            "mesh axis name 'tp' is used twice; name each axis once");
  EXPECT_EQ(error_of([&] {
              Mesh(cluster, {16, 4}, {"shard"});
            }),
            "the mesh shape (16, 4) has 2 axes but 1 names were given; give one name per axis");
  std::vector<int> twice = range(0, 64);
  twice[5] = 0;
  EXPECT_EQ(error_of([&] {
              Mesh(cluster, {16, 4}, {"shard", "tp"}, twice);
            }),
            "rank 0 appears twice in the placement, at mesh positions (0, 0) and (1, 1); "
            "a placement must use every rank exactly once");
  std::vector<int> outside = range(0, 64);
  outside[63] = 64;
  EXPECT_EQ(error_of([&] { Mesh(cluster, {64}, {"fsdp"}, outside); }),
            "rank 64 at mesh position (63,) is outside the world [0, 64) of 1 x trn2.48xlarge, "
            "LNC2, 64 ranks");
  EXPECT_EQ(error_of([&] { Mesh(cluster, {64}, {"fsdp"}, range(0, 32)); }),
            "the placement lists 32 ranks, but the mesh (64,) (\"fsdp\",) has 64 positions; give "
            "one rank per position");
}

TEST(MeshTest, ShapeProductIsCheckedNotWrapped) {
  Cluster cluster("trn2.48xlarge");
  // 536903681 = 2^29 + 2^15 + 1 and 536838145 = 2^29 - 2^15 + 1, so their product is 2^58 + 1
  // and 64 times it is 2^64 + 64: a 64-bit product wraps to exactly the world of 64.
  EXPECT_EQ(error_of([&] {
              Mesh(cluster, {64, 536903681, 536838145}, {"shard", "tp", "dp"});
            }),
            "mesh shape (64, 536903681, 536838145) holds more than 9223372036854775807 ranks, but "
            "the world has 64 "
            "(1 x trn2.48xlarge, LNC2, 64 ranks); make the product of the shape 64 or change "
            "--nodes/--lnc");
  // 65536 * 65536 = 2^32 wraps a 32-bit product to 0; held exactly in 64 bits.
  EXPECT_NE(error_of([&] {
              Mesh(cluster, {65536, 65536}, {"shard", "tp"});
            }).find("mesh shape (65536, 65536) holds 4294967296 ranks, but the world has 64"),
            std::string::npos);
}

}  // namespace
}  // namespace vtrn::topo
