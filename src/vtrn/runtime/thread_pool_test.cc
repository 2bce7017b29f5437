#include "vtrn/runtime/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace vtrn::runtime {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskOnceAcrossManyCalls) {
  for (int call = 0; call < 2000; ++call) {
    std::vector<std::atomic<int>> hits(5);
    parallel_for(5, [&](int i) { hits[static_cast<size_t>(i)].fetch_add(1); });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "call " << call;
  }
}

// parallel_ranges covers [0, n) with consecutive pieces, each index once; pieces are at least
// the grain long (one piece when n is smaller), at most kPiecesPerThread per thread, and the
// same pieces for the same arguments.
TEST(ThreadPoolTest, ParallelRangesCoverEachIndexOnceInGrainSizedPieces) {
  for (std::int64_t n : {0, 1, 7, 100, 1000, 65537})
    for (std::int64_t grain : {1, 16, 5000})
      for (int threads : {1, 2, 3}) {
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
        std::mutex mu;
        std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
        parallel_ranges(n, grain, threads, [&](std::int64_t lo, std::int64_t hi) {
          for (std::int64_t i = lo; i < hi; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
          std::lock_guard<std::mutex> lock(mu);
          pieces.emplace_back(lo, hi);
        });
        for (std::int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[static_cast<std::size_t>(i)].load(), 1) << n << " " << grain << " " << i;
        ASSERT_LE(pieces.size(), static_cast<std::size_t>(threads * kPiecesPerThread));
        for (auto [lo, hi] : pieces)
          if (pieces.size() > 1) ASSERT_GE(hi - lo, grain) << n << " " << grain << " " << threads;
      }
}

TEST(ThreadPoolTest, NestedCallsRunInTheCaller) {
  std::atomic<int> total{0};
  parallel_for(2, [&](int) { parallel_for(3, [&](int) { total.fetch_add(1); }); });
  EXPECT_EQ(total.load(), 6);
}

TEST(ThreadPoolTest, RethrowsAfterAllTasksRan) {
  std::atomic<int> ran{0};
  EXPECT_THROW(parallel_for(4,
                            [&](int i) {
                              ran.fetch_add(1);
                              if (i == 1) throw std::runtime_error("task failed");
                            }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 4);
  std::atomic<int> after{0};
  parallel_for(3, [&](int) { after.fetch_add(1); });  // the pool still works
  EXPECT_EQ(after.load(), 3);
}

TEST(ThreadPoolTest, WorksInTheChildOfAFork) {
  parallel_for(2, [](int) {});  // the parent's threads exist now
  const pid_t pid = fork();
  if (pid == 0) {
    std::atomic<int> n{0};
    parallel_for(4, [&](int) { n.fetch_add(1); });
    _exit(n.load() == 4 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace vtrn::runtime
