// Capacity checks and modeled time against hand-computed values (NeuronCore-v3 figures, see
// instruction_cost_test.cc).
#include "vtrn/nki/schedule.h"

#include <gtest/gtest.h>

#include "vtrn/nki/test_util.h"

namespace vtrn::nki {
namespace {

using namespace testing;

const cost::InstructionCostModel& trn2() {
  static const auto m = cost::InstructionCostModel::for_target("trn2");
  return m;
}

TEST(ScheduleTest, SbufOverflowNamesTheTilesAndTheBytes) {
  Program p("trn2");  // 229376 bytes per partition
  const auto h = tensor(p, "x", Memory::kHbm, DType::kFloat32, {128, 65536}, true);
  std::vector<std::int32_t> tiles;
  for (int i = 0; i < 4; ++i) {  // 4 x 64 KiB per partition = 256 KiB live at once
    tiles.push_back(
        tensor(p, "tile" + std::to_string(i), Memory::kSbuf, DType::kFloat32, {128, 16384}));
    p.dma_copy(inst(whole(p, tiles.back()), {block(p, h, 0, 128, i * 16384, 16384)}, "load"));
  }
  for (int i = 0; i < 4; ++i) {
    p.dma_copy(inst(block(p, h, 0, 128, i * 16384, 16384), {whole(p, tiles[i])}, "store"));
  }
  const std::string e = error_of([&] { check_capacity(p); });
  EXPECT_EQ(e.substr(0, e.find(". Largest")),
            "SBUF capacity exceeded on trn2 (NeuronCore-v3): at load (test.py:2) 4 live SBUF tiles "
            "need 262144 bytes per partition (33554432 bytes over 128 partitions), but SBUF has "
            "229376 bytes per partition (28 MiB)");
  EXPECT_NE(e.find("tile0 (128x16384 float32, 65536 B per partition, allocated at test.py:1)"),
            std::string::npos);
  EXPECT_THROW(check_capacity(p), CapacityError);
  // On trn3 (32 MiB = 262144 bytes per partition) the same program fits exactly.
  Program p3("trn3");
  const auto h3 = tensor(p3, "x", Memory::kHbm, DType::kFloat32, {128, 65536}, true);
  std::vector<std::int32_t> tiles3;
  for (int i = 0; i < 4; ++i) {
    tiles3.push_back(tensor(p3, "tile", Memory::kSbuf, DType::kFloat32, {128, 16384}));
    p3.dma_copy(inst(whole(p3, tiles3.back()), {block(p3, h3, 0, 128, i * 16384, 16384)}, "load"));
  }
  for (int i = 0; i < 4; ++i) {
    p3.dma_copy(inst(block(p3, h3, 0, 128, i * 16384, 16384), {whole(p3, tiles3[i])}, "store"));
  }
  Schedule peaks;
  check_capacity(p3, &peaks);
  EXPECT_EQ(peaks.sbuf.bytes_per_partition, 262144);
}

TEST(ScheduleTest, PsumHoldsEightBanks) {
  Program p("trn2");
  const auto st = tensor(p, "st", Memory::kSbuf, DType::kBFloat16, {128, 128});
  const auto mv = tensor(p, "mv", Memory::kSbuf, DType::kBFloat16, {128, 512});
  p.memset(inst(whole(p, st), {}, "memset"));
  p.memset(inst(whole(p, mv), {}, "memset"));
  std::vector<std::int32_t> banks;
  for (int i = 0; i < 9; ++i) {
    banks.push_back(
        tensor(p, "acc" + std::to_string(i), Memory::kPsum, DType::kFloat32, {128, 512}));
    p.matmul(inst(whole(p, banks.back()), {whole(p, st), whole(p, mv)}, "nc_matmul"));
  }
  const auto sb = tensor(p, "sb", Memory::kSbuf, DType::kFloat32, {128, 512});
  for (auto b : banks) p.tensor_copy(inst(whole(p, sb), {whole(p, b)}, "tensor_copy"));
  const std::string e = error_of([&] { check_capacity(p); });
  EXPECT_NE(
      e.find("PSUM capacity exceeded on trn2 (NeuronCore-v3): at nc_matmul (test.py:2) 9 live "
             "PSUM tiles need 18432 bytes per partition"),
      std::string::npos)
      << e;
  EXPECT_NE(e.find("PSUM has 16384 bytes per partition (2 MiB, 8 banks of 2 KiB per partition)"),
            std::string::npos);
}

TEST(ScheduleTest, OneLoadTakesTransferPlusLatency) {
  Program p("trn2");
  const auto h = tensor(p, "x", Memory::kHbm, DType::kFloat32, {128, 512}, true);
  const auto t = tensor(p, "t", Memory::kSbuf, DType::kFloat32, {128, 512});
  p.dma_copy(inst(whole(p, t), {whole(p, h)}, "load"));
  const Schedule s = schedule(p, trn2());
  // 128 rows of 2 KiB: (262144 + 128 * 512) / 362.5e9 + 1.3e-6.
  EXPECT_DOUBLE_EQ(s.latency_s, (262144.0 + 65536.0) / 362.5e9 + 1.3e-6);
  EXPECT_EQ(s.dma_bytes, 262144);
}

TEST(ScheduleTest, IndependentWorkOverlapsAndDependentWorkWaits) {
  Program p("trn2");
  const auto h = tensor(p, "x", Memory::kHbm, DType::kFloat32, {128, 512}, true);
  const auto t = tensor(p, "t", Memory::kSbuf, DType::kFloat32, {128, 512});
  const auto u = tensor(p, "u", Memory::kSbuf, DType::kFloat32, {128, 512});
  p.dma_copy(inst(whole(p, t), {whole(p, h)}, "load"));
  Instruction e = inst(whole(p, t), {whole(p, t)}, "exp");  // depends on the load
  e.func = ActFunc::kExp;
  p.activation(e);
  p.memset(inst(whole(p, u), {}, "memset"));  // independent: runs while the load is in flight
  const Schedule s = schedule(p, trn2());
  const double load_done = (262144.0 + 65536.0) / 362.5e9 + 1.3e-6;
  EXPECT_DOUBLE_EQ(s.timing[1].start_s, load_done);
  EXPECT_DOUBLE_EQ(s.timing[1].end_s, load_done + 512 / 1.2e9);
  EXPECT_DOUBLE_EQ(s.timing[2].start_s, 0.0);
  EXPECT_DOUBLE_EQ(s.latency_s, load_done + 512 / 1.2e9);
  EXPECT_EQ(s.timing[1].engine, Engine::kScalar);
}

TEST(ScheduleTest, BackToBackMatmulsKeepTheTensorEngineBusy) {
  Program p("trn2");
  const auto st = tensor(p, "st", Memory::kSbuf, DType::kBFloat16, {128, 128});
  const auto mv = tensor(p, "mv", Memory::kSbuf, DType::kBFloat16, {128, 512});
  const auto ps = tensor(p, "ps", Memory::kPsum, DType::kFloat32, {128, 512});
  p.memset(inst(whole(p, st), {}, "memset"));
  p.memset(inst(whole(p, mv), {}, "memset"));
  for (int k = 0; k < 8; ++k)
    p.matmul(inst(whole(p, ps), {whole(p, st), whole(p, mv)}, "nc_matmul"));
  const Schedule s = schedule(p, trn2());
  EXPECT_DOUBLE_EQ(s.busy_s[static_cast<int>(Engine::kTensor)], 8 * 512 / 2.4e9);
  EXPECT_NEAR(s.timing[9].end_s - s.timing[2].start_s, 8 * 512 / 2.4e9, 1e-15);
  EXPECT_EQ(s.matmul_flops, 8 * 2.0 * 128 * 128 * 512);
}

}  // namespace
}  // namespace vtrn::nki
