#include "vtrn/runtime/core_claim.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <string>

namespace vtrn::runtime {
namespace {

// Each test uses its own node key, so tests (and concurrent runs) never contend.
std::string unique_key(const char* test) {
  return std::string("test-") + test + "-" + std::to_string(getpid());
}

EnvLookup env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

/// Forks a child that claims |core| of |key|, reports through a pipe, and waits to be killed.
pid_t child_holding(const std::string& key, int core) {
  int ready[2];
  EXPECT_EQ(pipe(ready), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    CoreClaims claims(key);
    const char ok = claims.claim(core) ? 'n' : 'y';
    (void)!write(ready[1], &ok, 1);
    pause();
    _exit(0);
  }
  char ok = 0;
  EXPECT_EQ(read(ready[0], &ok, 1), 1);
  EXPECT_EQ(ok, 'y');
  close(ready[0]);
  close(ready[1]);
  return pid;
}

void kill_and_wait(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST(CoreClaimsTest, AProcessClaimsACoreOnceAndAgain) {
  CoreClaims claims(unique_key("again"));
  EXPECT_FALSE(claims.claim(3).has_value());
  EXPECT_FALSE(claims.claim(3).has_value());
  EXPECT_FALSE(claims.claim(4).has_value());
}

TEST(CoreClaimsTest, ASecondProcessIsRefusedWithTheHolderNamed) {
  const std::string key = unique_key("second");
  const pid_t holder = child_holding(key, 5);
  CoreClaims claims(key);
  const auto refused = claims.claim(5);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->pid, holder);
  EXPECT_EQ(refused->description.rfind("process " + std::to_string(holder), 0), 0u);
  // Another core of the node is free.
  EXPECT_FALSE(claims.claim(6).has_value());
  kill_and_wait(holder);
}

TEST(CoreClaimsTest, TheClaimEndsWithTheHolderHoweverItExits) {
  const std::string key = unique_key("exit");
  const pid_t holder = child_holding(key, 7);
  kill_and_wait(holder);  // SIGKILL: no cleanup code runs
  CoreClaims claims(key);
  EXPECT_FALSE(claims.claim(7).has_value());
}

TEST(CoreClaimsTest, OtherNodesNeverContend) {
  const pid_t holder = child_holding(unique_key("node-a"), 1);
  CoreClaims claims(unique_key("node-b"));
  EXPECT_FALSE(claims.claim(1).has_value());
  kill_and_wait(holder);
}

TEST(CoreClaimsTest, ReleasedCoresCanBeClaimedByAnother) {
  const std::string key = unique_key("release");
  CoreClaims first(key);
  ASSERT_FALSE(first.claim(2).has_value());
  first.release_all();
  CoreClaims second(key);
  EXPECT_FALSE(second.claim(2).has_value());
}

TEST(CoreClaimsTest, DescriptionNamesTheRanks) {
  const auto describe = describe_process(getpid(), env({{"RANK", "3"}, {"LOCAL_RANK", "1"}}));
  EXPECT_EQ(describe, "process " + std::to_string(getpid()) + " (RANK 3, LOCAL_RANK 1)");
  EXPECT_EQ(describe_process(getpid(), env({})), "process " + std::to_string(getpid()));
}

TEST(CoreClaimsTest, LauncherWorkersClaimAndOtherProcessesDoNot) {
  EXPECT_TRUE(launched_worker(env({{"LOCAL_RANK", "0"}})));
  // This test binary is neither a torchrun nor a multiprocessing worker.
  EXPECT_FALSE(launched_worker(env({})));
}

TEST(CoreClaimsTest, NodeKeyIsTheParentAndItsStartTime) {
  const std::string key = node_key();
  EXPECT_EQ(key.rfind(std::to_string(getppid()) + ".", 0), 0u);
  EXPECT_GT(key.size(), std::to_string(getppid()).size() + 1);  // the start time is there
}

}  // namespace
}  // namespace vtrn::runtime
