#include "vtrn/runtime/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
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
