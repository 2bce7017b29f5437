// Spec values against "Best practices for training on AWS Neuron" and the Neuron documentation
// (independent references).
#include "vtrn/hw/instance.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace vtrn::hw {
namespace {

// "Best practices for training on AWS Neuron": "16 Trainium2 chips with eight physical
// NeuronCores and 96 GiB of HBM each ... LNC2 ... 64 ranks per instance and approximately
// 24 GiB of HBM per rank".
TEST(InstanceTest, Trn2MatchesTheBestPracticesGuide) {
  const InstanceSpec& spec = find_instance("trn2.48xlarge");
  EXPECT_EQ(spec.chips, 16);
  EXPECT_EQ(spec.chip->physical_cores, 8);
  EXPECT_EQ(spec.chip->hbm, 96ull * 1024 * 1024 * 1024);
  EXPECT_EQ(resolve_lnc(spec, 0), 2);
  EXPECT_EQ(spec.chips * spec.ranks_per_chip(2), 64);
  EXPECT_EQ(spec.hbm_per_rank(2), 24ull * 1024 * 1024 * 1024);
  // logical-neuroncore-config.rst: LNC=1 gives 128 NeuronCores per instance.
  EXPECT_EQ(spec.chips * spec.ranks_per_chip(1), 128);
  EXPECT_EQ(spec.grid_rows, 4);
  EXPECT_EQ(spec.grid_cols, 4);
  EXPECT_EQ(spec.topology, ChipTopology::kTorus2D);
}

TEST(InstanceTest, Trn2Bandwidths) {
  const InstanceSpec& spec = find_instance("trn2.48xlarge");
  EXPECT_DOUBLE_EQ(spec.chip->neuronlink_intra_Bps, 1024e9);
  EXPECT_DOUBLE_EQ(spec.link_Bps, 256e9);
  EXPECT_DOUBLE_EQ(spec.chip->hbm_Bps, 2.9e12);
  EXPECT_DOUBLE_EQ(spec.chip->dma_core_Bps, 368e9);  // 16 x 23 B/ns
  EXPECT_DOUBLE_EQ(spec.efa_Bps, 400e9);             // 3,200 Gbps
  // collectives.rst: "3.2 Tbps/64 = 50 Gbps per rank" at LNC2.
  EXPECT_DOUBLE_EQ(spec.efa_chip_Bps() / spec.ranks_per_chip(2), 50e9 / 8);
  EXPECT_DOUBLE_EQ(spec.efa_latency, 15e-6);
}

TEST(InstanceTest, EnginePeaksPerDtype) {
  const ChipSpec& chip = *find_instance("trn2.48xlarge").chip;
  EXPECT_DOUBLE_EQ(chip.core.tensor(TensorEngineDType::kBF16), 79e12);
  EXPECT_DOUBLE_EQ(chip.core.tensor(TensorEngineDType::kFP16), 79e12);
  EXPECT_DOUBLE_EQ(chip.core.tensor(TensorEngineDType::kFP8), 158e12);
  EXPECT_DOUBLE_EQ(chip.core.tensor(TensorEngineDType::kFP32), 20e12);
  EXPECT_DOUBLE_EQ(chip.dense_bf16, 667e12);
  EXPECT_EQ(tensor_engine_dtype_name(TensorEngineDType::kBF16), "bf16");
}

TEST(InstanceTest, Trn1HasNoLnc) {
  const InstanceSpec& spec = find_instance("trn1.32xlarge");
  EXPECT_FALSE(spec.has_lnc());
  EXPECT_EQ(resolve_lnc(spec, 0), 0);
  // trn1-arch.rst: 32 NeuronCores.
  EXPECT_EQ(spec.chips * spec.ranks_per_chip(0), 32);
  try {
    resolve_lnc(spec, 2);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("trn1.32xlarge has no Logical NeuronCore setting"), std::string::npos)
        << what;
    EXPECT_NE(what.find("omit --lnc"), std::string::npos) << what;
  }
}

TEST(InstanceTest, UnsupportedLncNamesAllowedValues) {
  try {
    resolve_lnc(find_instance("trn2.48xlarge"), 4);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "LNC 4 is not available on trn2.48xlarge; use LNC 1 or 2 (default 2)");
  }
}

TEST(InstanceTest, UnknownInstanceListsKnownOnes) {
  try {
    find_instance("trn9.huge");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("unknown instance 'trn9.huge'"), std::string::npos);
    EXPECT_NE(what.find("trn2.48xlarge"), std::string::npos);
  }
}

TEST(InstanceTest, UltraServerAndTrn3) {
  const InstanceSpec& u = find_instance("trn2u.48xlarge");
  EXPECT_EQ(u.ultraserver_nodes, 4);  // 4 x trn2u.48xlarge = 64 chips
  EXPECT_EQ(u.ultraserver_fabric, UltraServerFabric::kZRing);
  EXPECT_DOUBLE_EQ(u.ultraserver_chip_Bps, 256e9);

  // Inside the instance a trn2u.48xlarge is a trn2.48xlarge (trn2-arch.rst): 4x4 torus of
  // Trainium2, 256 GB/s links, LNC 1/2 (default 2), EFAv3 3,200 Gbps = 400e9 B/s.
  EXPECT_EQ(u.chip, find_instance("trn2.48xlarge").chip);
  EXPECT_EQ(u.chips, 16);
  EXPECT_EQ(u.topology, ChipTopology::kTorus2D);
  EXPECT_EQ(u.grid_rows * u.grid_cols, 16);
  EXPECT_DOUBLE_EQ(u.link_Bps, 256e9);
  EXPECT_EQ(u.lnc_default, 2);
  EXPECT_EQ(u.lnc_allowed.size(), 2u);
  EXPECT_DOUBLE_EQ(u.efa_Bps, 400e9);
  EXPECT_EQ(find_instance("trn2.48xlarge").ultraserver_nodes, 1);

  const InstanceSpec& one = find_instance("trn2.3xlarge");
  EXPECT_EQ(one.chips, 1);
  EXPECT_EQ(one.chips * one.ranks_per_chip(2), 4);
  EXPECT_EQ(one.topology, ChipTopology::kSingleChip);
  EXPECT_DOUBLE_EQ(one.link_Bps, 0);
  EXPECT_DOUBLE_EQ(one.efa_Bps, 0);  // undocumented: multi-node refused
  EXPECT_EQ(one.ultraserver_nodes, 1);

  const InstanceSpec& t3 = find_instance("trn3.gen1-server");
  EXPECT_EQ(t3.topology, ChipTopology::kSwitch);
  // NKIL attention spec: "24GB on Trn2, 36GB on Trn3" per logical core.
  EXPECT_EQ(t3.hbm_per_rank(2), 36ull * 1024 * 1024 * 1024);
}

TEST(InstanceTest, NamesAreUnique) {
  auto all = instances();
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j) EXPECT_NE(all[i].name, all[j].name);
  EXPECT_EQ(&find_instance(all.front().name), &all.front());
}

}  // namespace
}  // namespace vtrn::hw
