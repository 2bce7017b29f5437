#include "vtrn/runtime/device_clock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

namespace vtrn::runtime {
namespace {

constexpr double kLaunch = 1e-6;

ModeledWork kernel(EngineClass engine, double seconds) {
  return ModeledWork::on(WorkKind::kKernel, engine, seconds);
}

TEST(DeviceClockTest, KernelsQueueOnTheirStreamAfterTheLaunchOverhead) {
  DeviceClock clock(kLaunch);
  const ClockRecord a = clock.advance(0, "aten::mm", kernel(EngineClass::kTensor, 10e-6), 7);
  EXPECT_DOUBLE_EQ(a.start_s, 1e-6);
  EXPECT_DOUBLE_EQ(a.end_s, 11e-6);
  EXPECT_EQ(a.correlation, 7u);
  const ClockRecord b = clock.advance(0, "aten::add", kernel(EngineClass::kVector, 2e-6));
  EXPECT_DOUBLE_EQ(b.start_s, 12e-6);  // 11 + 1 of launch
  EXPECT_DOUBLE_EQ(clock.now(0), 14e-6);
  // A copy pays no launch overhead.
  const ClockRecord c = clock.advance(0, "aten::_copy_from",
                                      ModeledWork::on(WorkKind::kCopy, EngineClass::kDma, 3e-6));
  EXPECT_DOUBLE_EQ(c.start_s, 14e-6);
  EXPECT_DOUBLE_EQ(clock.now(0), 17e-6);
  EXPECT_DOUBLE_EQ(clock.now(5), 0.0);  // an unused stream
}

TEST(DeviceClockTest, WorkSplitOverEnginesTakesTheSumAndIsReportedPerEngine) {
  DeviceClock clock(0);
  ModeledWork w;
  w.busy[static_cast<size_t>(EngineClass::kTensor)] = 4e-6;
  w.busy[static_cast<size_t>(EngineClass::kDma)] = 1e-6;
  const ClockRecord r = clock.advance(0, "aten::mm", w);
  EXPECT_DOUBLE_EQ(r.end_s - r.start_s, 5e-6);
  const ClockUsage u = clock.usage();
  ASSERT_EQ(u.streams.size(), 1u);
  EXPECT_DOUBLE_EQ(u.streams[0].busy[static_cast<size_t>(EngineClass::kTensor)], 4e-6);
  EXPECT_DOUBLE_EQ(u.streams[0].busy[static_cast<size_t>(EngineClass::kDma)], 1e-6);
  EXPECT_DOUBLE_EQ(u.streams[0].busy_s, 5e-6);
  EXPECT_DOUBLE_EQ(u.streams[0].idle_s, 0.0);
}

TEST(DeviceClockTest, OverlappedStreamsShortenTheStepByTheOverlap) {
  // Compute: k1 (3 us) then k2 (5 us) on stream 0. After k1 (event), stream 1 runs a 4 us
  // collective. Then stream 0 waits for stream 1. By hand: the collective runs 3..7 while k2
  // runs 3..8, so they overlap for 4 us and the step ends at 8 = 3 + 5 + 4 - 4.
  DeviceClock clock(0);
  clock.advance(0, "k1", kernel(EngineClass::kTensor, 3e-6));
  const double event = clock.now(0);
  clock.advance(0, "k2", kernel(EngineClass::kVector, 5e-6));
  clock.wait(1, event);
  const ClockRecord coll = clock.advance(
      1, "all_reduce", ModeledWork::on(WorkKind::kCollective, EngineClass::kCollective, 4e-6));
  EXPECT_DOUBLE_EQ(coll.start_s, 3e-6);
  clock.wait(0, clock.now(1));
  EXPECT_DOUBLE_EQ(clock.now(0), 8e-6);
  const ClockUsage u = clock.usage();
  EXPECT_DOUBLE_EQ(u.span_s(), 8e-6);
  ASSERT_EQ(u.streams.size(), 2u);
  EXPECT_DOUBLE_EQ(u.streams[0].busy_s + u.streams[1].busy_s - 4e-6, u.span_s());
  EXPECT_DOUBLE_EQ(u.streams[1].busy[static_cast<size_t>(EngineClass::kCollective)], 4e-6);
  EXPECT_DOUBLE_EQ(u.streams[1].idle_s, 4e-6);  // 8 of span, 4 busy
}

TEST(DeviceClockTest, WaitNeverMovesATimelineBack) {
  DeviceClock clock(0);
  clock.advance(0, "k", kernel(EngineClass::kVector, 5e-6));
  clock.wait(0, 2e-6);
  EXPECT_DOUBLE_EQ(clock.now(0), 5e-6);
}

TEST(DeviceClockTest, HostSynchronizationDelaysLaterWorkOnEveryStream) {
  DeviceClock clock(0);
  clock.advance(0, "k", kernel(EngineClass::kVector, 5e-6));
  // Without a host wait, another stream starts at 0.
  EXPECT_DOUBLE_EQ(clock.advance(1, "a", kernel(EngineClass::kVector, 1e-6)).start_s, 0.0);
  clock.host_wait_all();  // torch.neuron.synchronize()
  EXPECT_DOUBLE_EQ(clock.host_time(), 5e-6);
  EXPECT_DOUBLE_EQ(clock.advance(1, "b", kernel(EngineClass::kVector, 1e-6)).start_s, 5e-6);
  clock.host_wait(3e-6);  // never back
  EXPECT_DOUBLE_EQ(clock.host_time(), 5e-6);
}

TEST(DeviceClockTest, AMemberThatArrivesEarlyWaitsForTheLastAndIdles) {
  // Two members of a collective, each with its own clock: rank 0 arrives after 2 us of
  // compute, rank 1 after 5 us; both start the 3 us collective at 5 us.
  DeviceClock early(0), late(0);
  early.advance(0, "aten::mm", kernel(EngineClass::kTensor, 2e-6));
  late.advance(0, "aten::mm", kernel(EngineClass::kTensor, 5e-6));
  const double a = early.ready(0), b = late.ready(0);
  EXPECT_DOUBLE_EQ(a, 2e-6);
  EXPECT_DOUBLE_EQ(early.now(0), 2e-6);  // ready() changes nothing
  const double start = std::max(a, b);
  const ModeledWork coll = ModeledWork::on(WorkKind::kCollective, EngineClass::kCollective, 3e-6);
  for (DeviceClock* c : {&early, &late}) {
    c->wait(0, start);
    const ClockRecord r = c->advance(0, "all_reduce", coll);
    EXPECT_DOUBLE_EQ(r.start_s, 5e-6);
    EXPECT_DOUBLE_EQ(r.end_s, 8e-6);
  }
  // The early rank's 3 us of waiting is idle time; the late one has none.
  EXPECT_DOUBLE_EQ(early.usage().streams[0].idle_s, 3e-6);
  EXPECT_DOUBLE_EQ(late.usage().streams[0].idle_s, 0.0);
  // The host's time counts as an arrival too: work issued after a host wait starts then.
  early.host_wait(10e-6);
  EXPECT_DOUBLE_EQ(early.ready(0), 10e-6);
  EXPECT_DOUBLE_EQ(early.ready(3), 10e-6);  // an unused stream
}

TEST(DeviceClockTest, AnEventRecordIsNoEarlierThanTheHost) {
  DeviceClock clock(0);
  clock.advance(0, "k", kernel(EngineClass::kVector, 5e-6));
  clock.host_wait_all();
  EXPECT_DOUBLE_EQ(clock.mark(1), 5e-6);  // stream 1 was idle at 0
  EXPECT_DOUBLE_EQ(clock.now(1), 5e-6);
  clock.advance(0, "k2", kernel(EngineClass::kVector, 1e-6));
  EXPECT_DOUBLE_EQ(clock.mark(0), 6e-6);  // a busy stream: its own end
}

TEST(DeviceClockTest, ResetStartsANewSpanWithoutRewindingTimelines) {
  DeviceClock clock(0);
  clock.advance(0, "k", kernel(EngineClass::kVector, 5e-6));
  clock.advance(1, "c", ModeledWork::on(WorkKind::kCopy, EngineClass::kDma, 1e-6));
  clock.reset();
  ClockUsage u = clock.usage();
  EXPECT_DOUBLE_EQ(u.origin_s, 5e-6);
  EXPECT_TRUE(u.streams.empty());
  const ClockRecord r = clock.advance(1, "k2", kernel(EngineClass::kScalar, 2e-6));
  EXPECT_DOUBLE_EQ(r.start_s, 5e-6);  // not at stream 1's 1 us: the reset is a host sync
  u = clock.usage();
  ASSERT_EQ(u.streams.size(), 1u);
  EXPECT_EQ(u.streams[0].stream, 1);
  EXPECT_DOUBLE_EQ(u.streams[0].busy_s, 2e-6);
  EXPECT_DOUBLE_EQ(u.span_s(), 2e-6);
}

TEST(DeviceClockTest, RecordsWhileRecordingOnly) {
  DeviceClock clock(0);
  clock.advance(0, "before", kernel(EngineClass::kVector, 1e-6));
  clock.start_recording();
  EXPECT_TRUE(clock.recording());
  clock.advance(0, "aten::mul", kernel(EngineClass::kVector, 1e-6), 42);
  clock.advance(3, "all_gather",
                ModeledWork::on(WorkKind::kCollective, EngineClass::kCollective, 2e-6));
  const std::vector<ClockRecord> records = clock.stop_recording();
  EXPECT_FALSE(clock.recording());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].name, "aten::mul");
  EXPECT_EQ(records[0].correlation, 42u);
  EXPECT_DOUBLE_EQ(records[0].start_s, 1e-6);
  EXPECT_EQ(records[1].stream, 3);
  EXPECT_EQ(records[1].kind, WorkKind::kCollective);
  clock.advance(0, "after", kernel(EngineClass::kVector, 1e-6));
  EXPECT_TRUE(clock.stop_recording().empty());
}

TEST(DeviceClockTest, RejectsNegativeOrNonFiniteCosts) {
  DeviceClock clock(0);
  try {
    clock.advance(0, "aten::bad", kernel(EngineClass::kScalar, -1.0));
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'aten::bad' on the scalar engines"), std::string::npos)
        << e.what();
  }
  EXPECT_DOUBLE_EQ(clock.now(0), 0.0);  // nothing moved
  EXPECT_THROW(DeviceClock(-1.0), std::invalid_argument);
}

TEST(DeviceClockTest, NamesEngineClassesAndKinds) {
  EXPECT_EQ(engine_class_name(EngineClass::kGpSimd), "gpsimd");
  EXPECT_EQ(engine_class_name(EngineClass::kCollective), "collective");
  EXPECT_EQ(work_kind_name(WorkKind::kCopy), "copy");
}

}  // namespace
}  // namespace vtrn::runtime
