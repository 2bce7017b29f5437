#include "vtrn/runtime/device_config.h"

#include <gtest/gtest.h>

#include <map>

namespace vtrn::runtime {
namespace {

EnvLookup env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

TEST(DeviceConfigTest, DefaultIsTrn2At64LogicalCores) {
  const DeviceConfig c = device_config_from_env(env({}));
  EXPECT_EQ(c.instance->name, "trn2.48xlarge");
  EXPECT_EQ(c.lnc, 2);
  EXPECT_EQ(c.device_count(), 64);
  EXPECT_EQ(c.visible_cores.front(), 0);
  EXPECT_EQ(c.visible_cores.back(), 63);
  // One 24 GiB bank per logical core (96 GiB / 4 banks), less 96 MiB for each of its two
  // physical cores.
  EXPECT_EQ(c.cores_per_bank, 1);
  EXPECT_EQ(c.bank_bytes, 24 * kGiB - 2 * 96 * kMiB);
}

TEST(DeviceConfigTest, Lnc1Has128CoresAndPairsShareABank) {
  const DeviceConfig c = device_config_from_env(env({{"NEURON_LOGICAL_NC_CONFIG", "1"}}));
  EXPECT_EQ(c.lnc, 1);
  EXPECT_EQ(c.device_count(), 128);
  EXPECT_EQ(c.cores_per_bank, 2);
  EXPECT_EQ(c.bank_of(4), 2);
  EXPECT_EQ(c.bank_of(5), 2);
  EXPECT_EQ(c.bank_of(6), 3);
  EXPECT_EQ(c.bank_bytes, 24 * kGiB - 2 * 96 * kMiB);
}

TEST(DeviceConfigTest, Trn1Has32CoresOfSixteenGiB) {
  const DeviceConfig c =
      device_config_from_env(env({{"NEURON_RT_FAKE_INSTANCE_TYPE", "trn1.32xlarge"}}));
  EXPECT_EQ(c.lnc, 0);
  EXPECT_EQ(c.device_count(), 32);
  EXPECT_EQ(c.bank_bytes, 16 * kGiB - 96 * kMiB);
}

TEST(DeviceConfigTest, VisibleCoresRangeAndNumCores) {
  const DeviceConfig range = device_config_from_env(env({{"NEURON_RT_VISIBLE_CORES", "4-7"}}));
  EXPECT_EQ(range.visible_cores, (std::vector<int>{4, 5, 6, 7}));
  const DeviceConfig one = device_config_from_env(env({{"NEURON_RT_VISIBLE_CORES", "9"}}));
  EXPECT_EQ(one.visible_cores, (std::vector<int>{9}));
  const DeviceConfig list = device_config_from_env(env({{"NEURON_RT_VISIBLE_CORES", "0-1,8"}}));
  EXPECT_EQ(list.visible_cores, (std::vector<int>{0, 1, 8}));
  const DeviceConfig num = device_config_from_env(env({{"NEURON_RT_NUM_CORES", "3"}}));
  EXPECT_EQ(num.visible_cores, (std::vector<int>{0, 1, 2}));
  // VISIBLE_CORES wins over NUM_CORES, as on the runtime.
  const DeviceConfig both = device_config_from_env(
      env({{"NEURON_RT_VISIBLE_CORES", "2-3"}, {"NEURON_RT_NUM_CORES", "8"}}));
  EXPECT_EQ(both.visible_cores, (std::vector<int>{2, 3}));
}

TEST(DeviceConfigTest, HbmOverride) {
  const DeviceConfig c = device_config_from_env(env({{"VTRN_HBM_BYTES", "1048576"}}));
  EXPECT_EQ(c.bank_bytes, kMiB);
}

TEST(DeviceConfigTest, ExecutionMode) {
  EXPECT_FALSE(device_config_from_env(env({})).shapes_only);
  EXPECT_FALSE(device_config_from_env(env({{"VTRN_EXECUTION", "run"}})).shapes_only);
  EXPECT_TRUE(device_config_from_env(env({{"VTRN_EXECUTION", "shapes"}})).shapes_only);
}

void expect_error(std::map<std::string, std::string> vars, const std::string& fragment) {
  try {
    device_config_from_env(env(vars));
    FAIL() << "expected an error containing: " << fragment;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(DeviceConfigTest, BadInputSaysWhatWasWrongAndWhatIsAccepted) {
  expect_error({{"NEURON_RT_VISIBLE_CORES", "60-70"}},
               "names core 70, which does not exist; this instance has logical cores 0-63");
  expect_error({{"NEURON_RT_VISIBLE_CORES", "7-4"}}, "ends before it starts");
  expect_error({{"NEURON_RT_VISIBLE_CORES", "a"}},
               "Use an index (\"5\"), an inclusive range (\"4-7\")");
  expect_error({{"NEURON_RT_VISIBLE_CORES", "1,1"}}, "names core 1 twice");
  expect_error({{"NEURON_RT_NUM_CORES", "65"}}, "must be a count from 0 (all) to 64");
  expect_error({{"NEURON_LOGICAL_NC_CONFIG", "3"}}, "use LNC 1 or 2");
  expect_error({{"NEURON_LOGICAL_NC_CONFIG", "x"}}, "use 1 or 2");
  expect_error({{"NEURON_RT_FAKE_INSTANCE_TYPE", "p5.48xlarge"}},
               "NEURON_RT_FAKE_INSTANCE_TYPE='p5.48xlarge'");
  expect_error(
      {{"NEURON_RT_FAKE_INSTANCE_TYPE", "trn1.32xlarge"}, {"NEURON_LOGICAL_NC_CONFIG", "2"}},
      "has no Logical NeuronCore setting");
  expect_error({{"VTRN_HBM_BYTES", "-5"}}, "must be a positive byte count");
  expect_error({{"VTRN_EXECUTION", "meta"}}, "VTRN_EXECUTION='meta' is not an execution mode");
}

}  // namespace
}  // namespace vtrn::runtime
