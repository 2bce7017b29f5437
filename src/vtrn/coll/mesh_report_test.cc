// Per-mesh reports on the meshes of "Best practices for training on AWS Neuron".
#include "vtrn/coll/mesh_report.h"

#include <gtest/gtest.h>

#include "vtrn/coll/test_support.h"

namespace vtrn::coll {
namespace {

using testing::range;

TEST(MeshReportTest, BestPracticesDefaultTp8Fsdp8) {
  topo::Cluster cluster("trn2.48xlarge");
  topo::LinkGraph graph(cluster);
  topo::Mesh mesh(cluster, {8, 8}, {"dp", "tp"});
  auto sizes = default_report_sizes();
  MeshReport report = analyze_mesh(cluster, graph, mesh, sizes);
  EXPECT_FALSE(report.routable);
  ASSERT_EQ(report.axes.size(), 2u);
  const AxisReport& dp = report.axes[0];
  EXPECT_EQ(dp.name, "dp");
  EXPECT_EQ(dp.collective, Collective::kAllGather);
  EXPECT_FALSE(dp.routable);
  EXPECT_EQ(dp.first_bad_group, 0);
  EXPECT_EQ(dp.groups[0], range(0, 64, 8));
  EXPECT_NE(dp.error.find("failed (2) to init a collective algorithm. reason: no_hier no_mesh"),
            std::string::npos);
  EXPECT_TRUE(dp.estimates.empty());
  // Every DP group skips every other chip: none routable.
  for (char ok : dp.group_routable) EXPECT_FALSE(ok);

  const AxisReport& tp = report.axes[1];
  EXPECT_TRUE(tp.routable);
  EXPECT_EQ(tp.collective, Collective::kAllReduce);
  EXPECT_EQ(tp.groups[0], range(0, 8));
  ASSERT_EQ(tp.estimates.size(), 3u);
  EXPECT_EQ(tp.estimates[0].bytes, 65536u);
  EXPECT_EQ(tp.estimates[0].estimate.choice.algorithm, Algorithm::kMesh);
  EXPECT_EQ(tp.estimates[1].estimate.choice.algorithm, Algorithm::kRDH);
  EXPECT_EQ(tp.estimates[2].estimate.choice.algorithm, Algorithm::kKangaRing);
  // 256 MiB all-reduce over two whole chips: 2 * (3 * 1.5e-6 + 268435456 / 2 / 256e9), see
  // collective_time_test.
  EXPECT_NEAR(tp.estimates[2].estimate.seconds, 1.057576e-3, 1e-15);
  EXPECT_NEAR(tp.estimates[2].seconds_by_collective[1], 5.28788e-4, 1e-15);  // all_gather
}

TEST(MeshReportTest, BestPracticesHsdpMesh) {
  topo::Cluster cluster("trn2.48xlarge", 2, 4);
  topo::LinkGraph graph(cluster);
  topo::Mesh mesh(cluster, {4, 16, 4}, {"replicate", "shard", "tp"});
  auto sizes = default_report_sizes();
  MeshReport report = analyze_mesh(cluster, graph, mesh, sizes);
  EXPECT_TRUE(report.routable);
  EXPECT_EQ(report.axes[0].collective, Collective::kAllReduce);
  EXPECT_EQ(report.axes[0].estimates[1].estimate.choice.algorithm, Algorithm::kHierarchical);
  EXPECT_EQ(report.axes[1].estimates[1].estimate.choice.algorithm, Algorithm::kRDH);
  EXPECT_EQ(report.axes[2].estimates[1].estimate.choice.algorithm, Algorithm::kIntraChip);
}

TEST(MeshReportTest, PipelineSends) {
  topo::Cluster cluster("trn2.48xlarge", 2, 2);
  topo::LinkGraph graph(cluster);
  topo::Mesh mesh(cluster, {2, 16, 4}, {"pp", "shard", "tp"});
  auto sizes = default_report_sizes();
  MeshReport report = analyze_mesh(cluster, graph, mesh, sizes);
  EXPECT_TRUE(report.routable);
  EXPECT_EQ(report.axes[0].collective, Collective::kSendRecv);
  EXPECT_EQ(report.axes[0].groups[0], (std::vector<int>{0, 64}));
  // 64 KiB over EFA: 15e-6 + 65536 / 25e9 = 1.5e-5 + 2.62144e-6
  EXPECT_NEAR(report.axes[0].estimates[0].estimate.seconds, 1.762144e-5, 1e-15);
}

}  // namespace
}  // namespace vtrn::coll
