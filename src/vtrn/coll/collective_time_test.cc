// The collective time model against hand-computed values. Inputs, from the hw sources:
//   DMA of one logical core at LNC2: 2 x 16 engines x 23 B/ns = 736e9 B/s; DMA start 1.3 µs
//   NeuronLink-v3 link: 1,024 GB/s / 4 = 256e9 B/s; hop 1.5 µs
//   EFA: 3,200 Gbps / 16 chips = 25e9 B/s per chip; hop 15 µs
//   UltraServer: 256e9 B/s per chip to the other instances
// Each expected value below is written out from the formulas in docs/collectives.md.
#include "vtrn/coll/collective_time.h"

#include <gtest/gtest.h>

#include "vtrn/coll/test_support.h"
#include "vtrn/hw/units.h"

namespace vtrn::coll {
namespace {

using testing::range;
constexpr double kRel = 1e-12;

struct Fixture {
  topo::Cluster cluster;
  topo::LinkGraph graph;
  explicit Fixture(const char* instance = "trn2.48xlarge", int nodes = 1)
      : cluster(instance, 2, nodes), graph(cluster) {}
  Estimate run(const std::vector<int>& ranks, Collective c, hw::Bytes bytes) const {
    return estimate(cluster, route_group(cluster, graph, ranks), c, bytes);
  }
};

#define EXPECT_SECONDS(actual, expected) EXPECT_NEAR(actual, expected, (expected)*kRel)

TEST(ModelTest, IntraChipTp4) {
  Fixture f;
  // S = 4 MiB = 4,194,304 B. all-gather = 1.3e-6 + 3/4 * 4194304 / 736e9
  //   = 1.3e-6 + 3145728 / 736e9 = 1.3e-6 + 4.27408695652e-6 = 5.57408695652e-6
  Estimate ag = f.run({0, 1, 2, 3}, Collective::kAllGather, 4194304);
  EXPECT_EQ(ag.choice.algorithm, Algorithm::kIntraChip);
  EXPECT_SECONDS(ag.seconds, 5.574086956521739e-6);
  EXPECT_SECONDS(f.run({0, 1, 2, 3}, Collective::kAllReduce, 4194304).seconds,
                 1.1148173913043478e-5);
  EXPECT_SECONDS(f.run({0, 1, 2, 3}, Collective::kReduceScatter, 4194304).seconds,
                 5.574086956521739e-6);
  // all-to-all: 1.3e-6 + (4-1)/4 * S / 736e9: the same number here.
  EXPECT_SECONDS(f.run({0, 1, 2, 3}, Collective::kAllToAll, 4194304).seconds, 5.574086956521739e-6);
  // send/recv on one chip: 1.3e-6 + 4194304 / 736e9 = 1.3e-6 + 5.69878260870e-6
  EXPECT_SECONDS(f.run({0, 1}, Collective::kSendRecv, 4194304).seconds, 6.998782608695652e-6);
  // One rank: nothing moves.
  EXPECT_EQ(f.run({5}, Collective::kAllReduce, 4194304).seconds, 0.0);
}

TEST(ModelTest, Fsdp16OneRankPerChip) {
  Fixture f;
  const auto group = range(0, 64, 4);  // 16 chips, 1 rank each; every chip has 4 links: 1024e9
  // 64 KiB: Mesh, 1 step, mean hops 32/15:
  //   1.5e-6 + (32/15) * (15/16) * 65536 / 1024e9 = 1.5e-6 + 1.28e-7 = 1.628e-6
  Estimate small = f.run(group, Collective::kAllGather, 65536);
  EXPECT_EQ(small.choice.algorithm, Algorithm::kMesh);
  EXPECT_SECONDS(small.seconds, 1.628e-6);
  // 16 MiB: RDH, log2(16) = 4 steps: 6e-6 + (15/16) * 16777216 / 1024e9 = 6e-6 + 1.536e-5
  Estimate mid = f.run(group, Collective::kAllGather, 16777216);
  EXPECT_EQ(mid.choice.algorithm, Algorithm::kRDH);
  EXPECT_SECONDS(mid.seconds, 2.136e-5);
  // 256 MiB: not every rank of each chip is in the group: Ring, 15 steps:
  //   2.25e-5 + (15/16) * 268435456 / 1024e9 = 2.25e-5 + 2.4576e-4
  Estimate big = f.run(group, Collective::kAllGather, 268435456);
  EXPECT_EQ(big.choice.algorithm, Algorithm::kRing);
  EXPECT_SECONDS(big.seconds, 2.6826e-4);
  // all-to-all 1 MiB: 1.5e-6 + (32/15) * 1 * (15/16) * 1048576 / 1024e9 = 1.5e-6 + 2.048e-6
  EXPECT_SECONDS(f.run(group, Collective::kAllToAll, 1048576).seconds, 3.548e-6);
}

TEST(ModelTest, Tp8OverTwoChips) {
  Fixture f;
  const auto group = range(0, 8);  // chips 0 and 1, whole chips, one 256e9 link
  // 256 MiB: KangaRing, 2*4/2 - 1 = 3 steps, intra-chip folded:
  //   4.5e-6 + 1/2 * 268435456 / 256e9 = 4.5e-6 + 5.24288e-4 = 5.28788e-4; all-reduce twice that.
  Estimate ar = f.run(group, Collective::kAllReduce, 268435456);
  EXPECT_EQ(ar.choice.algorithm, Algorithm::kKangaRing);
  EXPECT_SECONDS(ar.seconds, 1.057576e-3);
  // 16 MiB: RDH, 1 step, plus the intra-chip stage:
  //   node 1.5e-6 + 1/2 * 16777216 / 256e9 = 3.4268e-5
  //   chip 1.3e-6 + 3/4 * 16777216 / 736e9 = 1.3e-6 + 1.70963478261e-5 = 1.83963478261e-5
  EXPECT_SECONDS(f.run(group, Collective::kAllGather, 16777216).seconds, 5.266434782608696e-5);
  // broadcast 1 MiB: node 1 * 1.5e-6 + 1048576 / 256e9 = 5.596e-6
  //                  chip 1.3e-6 + 1048576 / 736e9 = 2.72469565217e-6
  EXPECT_SECONDS(f.run(group, Collective::kBroadcast, 1048576).seconds, 8.320695652173913e-6);
  // send/recv between chips: one link: 1.5e-6 + 1048576 / 256e9 = 5.596e-6
  EXPECT_SECONDS(f.run(group, Collective::kSendRecv, 1048576).seconds, 5.596e-6);
}

TEST(ModelTest, ReplicateAcrossFourNodesOverEfa) {
  Fixture f("trn2.48xlarge", 4);
  const std::vector<int> group = {0, 64, 128, 192};
  // 16 MiB: Hierarchical, inter-node RDH (4 nodes): 2 * 15e-6 + 3/4 * 16777216 / 25e9
  //   = 3e-5 + 5.0331648e-4 = 5.3331648e-4
  Estimate ag = f.run(group, Collective::kAllGather, 16777216);
  EXPECT_EQ(ag.choice.algorithm, Algorithm::kHierarchical);
  EXPECT_EQ(ag.choice.net, Algorithm::kRDH);
  EXPECT_EQ(ag.choice.node, Algorithm::kNone);
  EXPECT_SECONDS(ag.seconds, 5.3331648e-4);
  EXPECT_SECONDS(f.run(group, Collective::kAllReduce, 16777216).seconds, 1.06663296e-3);
  // 256 MiB: Ring, 3 steps: 4.5e-5 + 3/4 * 268435456 / 25e9 = 4.5e-5 + 8.05306368e-3
  Estimate big = f.run(group, Collective::kAllGather, 268435456);
  EXPECT_EQ(big.choice.net, Algorithm::kRing);
  EXPECT_SECONDS(big.seconds, 8.09806368e-3);
  // send/recv 1 MiB: 15e-6 + 1048576 / 25e9 = 1.5e-5 + 4.194304e-5
  EXPECT_SECONDS(f.run(group, Collective::kSendRecv, 1048576).seconds, 5.694304e-5);
  // broadcast 1 MiB: ceil(log2 4) = 2 hops: 3e-5 + 4.194304e-5
  EXPECT_SECONDS(f.run(group, Collective::kBroadcast, 1048576).seconds, 7.194304e-5);
  // all-to-all 1 MiB, k = c = 1: 15e-6 + 1 * 3/4 * 1048576 / 25e9 = 1.5e-5 + 3.145728e-5
  EXPECT_SECONDS(f.run(group, Collective::kAllToAll, 1048576).seconds, 4.645728e-5);
}

TEST(ModelTest, ShardAcrossFourNodes) {
  Fixture f("trn2.48xlarge", 4);
  const auto group = range(0, 256, 4);  // (64, 4) mesh shard group: 16 chips on each of 4 nodes
  // 16 MiB: net RDH: 2 * 15e-6 + 3/4 * 16777216 / (16 * 25e9) = 3e-5 + 3.145728e-5
  //         node RDH: 4 * 1.5e-6 + 15/16 * 16777216 / 1024e9 = 6e-6 + 1.536e-5
  Estimate ag = f.run(group, Collective::kAllGather, 16777216);
  EXPECT_EQ(ag.choice.node, Algorithm::kRDH);
  EXPECT_EQ(ag.choice.net, Algorithm::kRDH);
  EXPECT_SECONDS(ag.seconds, 8.281728e-5);
  EXPECT_EQ(f.run(group, Collective::kAllGather, 65536).choice.node, Algorithm::kMesh);
  EXPECT_EQ(f.run(group, Collective::kAllGather, 65536).choice.net, Algorithm::kMesh);
}

TEST(ModelTest, UltraServerUsesNeuronLinkBetweenNodes) {
  Fixture f("trn2u.48xlarge", 4);
  // Nodes 0 and 1 are Z neighbours: 1 step of 1.5e-6 + 1/2 * 16777216 / 256e9 = 1.5e-6 + 3.2768e-5
  EXPECT_SECONDS(f.run({0, 64}, Collective::kAllGather, 16777216).seconds, 3.4268e-5);
  // Nodes 0 and 2 are not: EFA, 15e-6 + 1/2 * 16777216 / 25e9 = 1.5e-5 + 3.3554432e-4
  EXPECT_SECONDS(f.run({0, 128}, Collective::kAllGather, 16777216).seconds, 3.5054432e-4);
}

TEST(ModelTest, SizeThresholds) {
  Fixture f;
  const auto tp8 = range(0, 8);
  auto algo = [&](hw::Bytes bytes) {
    return f.run(tp8, Collective::kAllReduce, bytes).choice.algorithm;
  };
  EXPECT_EQ(algo(1048575), Algorithm::kMesh);
  EXPECT_EQ(algo(1048576), Algorithm::kRDH);          // 1 MiB
  EXPECT_EQ(algo(56ull * 1048576), Algorithm::kRDH);  // 56 MiB
  EXPECT_EQ(algo(56ull * 1048576 + 1), Algorithm::kKangaRing);
  // One rank per chip above 56 MiB: Ring.
  EXPECT_EQ(f.run(range(0, 64, 4), Collective::kAllReduce, 64ull << 20).choice.algorithm,
            Algorithm::kRing);
  // Hierarchical between 3 nodes (not a power of two) at 16 MiB: Ring between nodes.
  Fixture three("trn2.48xlarge", 3);
  EXPECT_EQ(three.run({0, 64, 128}, Collective::kAllGather, 16ull << 20).choice.net,
            Algorithm::kRing);
}

TEST(ModelTest, BroadcastIsNeverSlowerThanAllReduce) {
  Fixture f;
  // The chip-pair DP group of "Best practices for training on AWS Neuron" [0, 4, ..., 28]: chips
  // 0-7, rows 0 and 1 of the torus. Each chip has 3 links into the group (two row neighbours, one
  // column neighbour): 768e9 B/s. Hops from chip 0 inside the group: 1, 3, 4 at 1; 2, 5, 7 at 2; 6
  // at 3: mean 12/7.
  const auto group = range(0, 32, 4);
  // 64 KiB all-reduce, Mesh: 2 * (1.5e-6 + (12/7) * (7/8) * 65536 / 768e9)
  //   = 2 * (1.5e-6 + 1.28e-7) = 3.256e-6
  Estimate ar = f.run(group, Collective::kAllReduce, 65536);
  EXPECT_EQ(ar.choice.algorithm, Algorithm::kMesh);
  EXPECT_SECONDS(ar.seconds, 3.256e-6);
  // The binomial tree would take ceil(log2 8) = 3 hops: 4.5e-6 + 65536 / 768e9 = 4.585333e-6;
  // scatter + all-gather over Mesh takes the all-reduce's 3.256e-6, the cheaper.
  Estimate bc = f.run(group, Collective::kBroadcast, 65536);
  EXPECT_EQ(bc.choice.algorithm, Algorithm::kMesh);
  EXPECT_SECONDS(bc.seconds, 3.256e-6);
  // 256 MiB, Ring over 8 chips (7 steps): gather = 1.05e-5 + 7/8 * 268435456 / 768e9
  //   = 1.05e-5 + 3.0583e-4 (3.05834666667e-4); scatter + all-gather = 6.32669333e-4.
  //   Tree: 4.5e-6 + 268435456 / 768e9 = 4.5e-6 + 3.49525333e-4 = 3.54025333e-4, the cheaper.
  EXPECT_SECONDS(f.run(group, Collective::kBroadcast, 268435456).seconds, 3.5402533333333333e-4);
}

TEST(ModelTest, SendRecvIsPointToPoint) {
  Fixture f("trn2.48xlarge", 2);
  // PP across two nodes at 16 MiB: one EFA transfer, not the all-gather's Hierarchical choice.
  // 15e-6 + 16777216 / 25e9 = 1.5e-5 + 6.7108864e-4
  Estimate e = f.run({0, 64}, Collective::kSendRecv, 16777216);
  EXPECT_EQ(e.choice.algorithm, Algorithm::kPointToPoint);
  EXPECT_EQ(e.choice.node, Algorithm::kNone);
  EXPECT_EQ(e.choice.net, Algorithm::kNone);
  EXPECT_EQ(algorithm_name(e.choice.algorithm), "P2P");
  EXPECT_SECONDS(e.seconds, 6.8608864e-4);
  EXPECT_EQ(f.run({0, 64}, Collective::kAllGather, 16777216).choice.algorithm,
            Algorithm::kHierarchical);
}

TEST(ModelTest, NamesAndErrors) {
  EXPECT_EQ(algorithm_name(Algorithm::kKangaRing), "KangaRing");
  EXPECT_EQ(collective_name(Collective::kSendRecv), "send_recv");
  EXPECT_EQ(parse_collective("all_gather"), Collective::kAllGather);
  EXPECT_THROW(parse_collective("gather"), std::invalid_argument);
  Fixture f;
  Route dp = route_group(f.cluster, f.graph, range(0, 64, 8));
  EXPECT_THROW(estimate(f.cluster, dp, Collective::kAllGather, 1024), std::invalid_argument);
}

}  // namespace
}  // namespace vtrn::coll
