#include "vtrn/runtime/stream.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vtrn::runtime {
namespace {

using namespace std::chrono_literals;

TEST(StreamTest, RunsInOrderAndSynchronizeWaits) {
  Stream s("neuron:0 stream 0");
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) s.enqueue("push", [&order, i] { order.push_back(i); });
  s.synchronize();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_TRUE(s.query());
}

TEST(StreamTest, EnqueueReturnsBeforeWorkRuns) {
  Stream s("s");
  std::atomic<bool> release{false};
  std::atomic<bool> ran{false};
  s.enqueue("gate", [&] {
    while (!release.load()) std::this_thread::yield();
  });
  s.enqueue("mark", [&] { ran = true; });
  EXPECT_FALSE(ran.load());
  EXPECT_FALSE(s.query());
  release = true;
  s.synchronize();
  EXPECT_TRUE(ran.load());
}

TEST(StreamTest, ErrorSurfacesAtSynchronizeNamingTheOpThenClears) {
  Stream s("neuron:2 stream 0");
  std::atomic<int> after{0};
  s.enqueue("aten::bad", [] { throw std::runtime_error("boom"); });
  s.enqueue("aten::good", [&] { after = 1; });
  try {
    s.synchronize();
    FAIL() << "expected QueuedOpError";
  } catch (const QueuedOpError& e) {
    EXPECT_STREQ(e.what(), "queued op 'aten::bad' on neuron:2 stream 0 failed: boom");
  }
  EXPECT_EQ(after.load(), 1);  // the stream kept going
  EXPECT_NO_THROW(s.synchronize());
}

TEST(StreamTest, TwoStreamsAreOrderedOnlyByEvents) {
  // Stream a is held at a gate; b's work must wait for a's write only when b blocks on an
  // event a recorded after the write.
  for (bool use_event : {true, false}) {
    Stream a("a"), b("b");
    std::atomic<bool> release{false};
    std::atomic<int> value{0};
    int seen = -1;
    a.enqueue("gate", [&] {
      while (!release.load()) std::this_thread::yield();
    });
    a.enqueue("write", [&] { value = 42; });
    Event written;
    written.record(a);
    if (use_event) written.block(b);
    b.enqueue("read", [&] { seen = value.load(); });
    if (!use_event) b.synchronize();  // b ran ahead of a's write
    release = true;
    a.synchronize();
    b.synchronize();
    EXPECT_EQ(seen, use_event ? 42 : 0) << "use_event=" << use_event;
  }
}

// A forked child has no workers: a task running in the parent at the fork cannot finish there.
// The child's waits must return (with an error naming the task), and queued work must run.
TEST(StreamTest, TaskRunningAtForkIsReportedInTheChildInsteadOfHanging) {
  Stream s("neuron:0 stream 3");
  std::atomic<bool> started{false};
  std::atomic<int> after{0};
  s.enqueue("long op", [&] {
    started = true;
    std::this_thread::sleep_for(300ms);
  });
  s.enqueue("queued op", [&] { after = 1; });
  while (!started.load()) std::this_thread::yield();
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      s.synchronize();
      code = 1;  // the lost task was not reported
    } catch (const QueuedOpError& e) {
      if (std::string(e.what()).find("'long op' on neuron:0 stream 3 was running when the "
                                     "process forked") == std::string::npos)
        code = 2;
    }
    if (after.load() != 1) code = 3;  // the task the parent had not started ran here
    s.enqueue("child op", [&] { after = 2; });
    s.synchronize();
    if (after.load() != 2) code = 4;
    _exit(code);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  s.synchronize();  // the parent's stream is untouched
  EXPECT_EQ(after.load(), 1);
}

// Held for the fork, the stream finishes its running task first: the child loses nothing.
// An event wait is not waited for (its event may depend on a held stream): it waits again in
// the child.
TEST(StreamTest, HeldForForkTheChildLosesNoTaskAndEventWaitsRunAgain) {
  Stream s("neuron:0 stream 1"), other("neuron:0 stream 2");
  std::atomic<bool> started{false};
  std::atomic<int> long_done{0}, after{0};
  other.enqueue("slow op", [] { std::this_thread::sleep_for(50ms); });
  Event e;
  e.record(other);
  other.hold_for_fork();  // the record's marker stays queued: |e| is not reached
  s.enqueue("long op", [&] {
    started = true;
    std::this_thread::sleep_for(300ms);
    long_done = 1;
  });
  s.enqueue("queued op", [&] { after = 1; });
  while (!started.load()) std::this_thread::yield();
  s.hold_for_fork();  // returns once 'long op' ran
  EXPECT_EQ(long_done.load(), 1);
  Stream waiter("neuron:0 stream 3");
  std::atomic<int> after_wait{0};
  e.block(waiter);
  waiter.enqueue("after the wait", [&] { after_wait = other.completed() >= 2 ? 1 : 2; });
  std::this_thread::sleep_for(50ms);  // the worker is in the wait: |other| holds its record
  waiter.hold_for_fork();             // returns although the wait goes on
  EXPECT_EQ(waiter.completed(), 0u);
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      s.synchronize();
      waiter.synchronize();
    } catch (const QueuedOpError&) {
      code = 1;  // a task was lost
    }
    if (after.load() != 1) code = 2;       // the queued task ran here
    if (after_wait.load() != 1) code = 3;  // the event wait held back the task after it
    _exit(code);
  }
  ASSERT_GT(pid, 0);
  s.release_after_fork();
  other.release_after_fork();
  waiter.release_after_fork();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  s.synchronize();
  waiter.synchronize();
  EXPECT_EQ(after.load(), 1);
  EXPECT_EQ(after_wait.load(), 1);
}

// An idle stream runs the work on the calling thread, as a task that ran at once: it takes a
// sequence number, running_on() names the stream, and a throw waits for synchronize().
TEST(StreamTest, RunsInlineWhenIdleAsATaskThatRanAtOnce) {
  Stream s("neuron:0 stream 0");
  std::thread::id ran_on;
  const Stream* running = nullptr;
  auto work = [&] {
    ran_on = std::this_thread::get_id();
    running = Stream::running_on();
  };
  EXPECT_EQ(s.run_inline_if_idle("aten::add", work), 1u);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(running, &s);
  EXPECT_EQ(Stream::running_on(), nullptr);
  EXPECT_EQ(s.completed(), 1u);
  EXPECT_TRUE(s.query());
  auto bad = [] { throw std::runtime_error("boom"); };
  EXPECT_EQ(s.run_inline_if_idle("aten::bad", bad), 2u);  // no throw at the call
  try {
    s.synchronize();
    FAIL() << "expected QueuedOpError";
  } catch (const QueuedOpError& e) {
    EXPECT_STREQ(e.what(), "queued op 'aten::bad' on neuron:0 stream 0 failed: boom");
  }
  EXPECT_NO_THROW(s.synchronize());
}

// Queued work that has not run keeps the stream busy: the work is not run, and the caller
// enqueues it behind.
TEST(StreamTest, BusyStreamDoesNotRunInline) {
  Stream s("s");
  std::atomic<bool> release{false};
  s.enqueue("gate", [&] {
    while (!release.load()) std::this_thread::yield();
  });
  bool ran = false;
  auto work = [&] { ran = true; };
  EXPECT_EQ(s.run_inline_if_idle("mark", work), 0u);
  EXPECT_FALSE(ran);
  EXPECT_EQ(s.enqueued(), 1u);
  release = true;
  s.synchronize();
  EXPECT_EQ(s.run_inline_if_idle("mark", work), 2u);
  EXPECT_TRUE(ran);
}

// Work another thread enqueues while an inline task runs waits for it, and an event recorded
// meanwhile is reached only after both.
TEST(StreamTest, WorkEnqueuedDuringAnInlineTaskRunsAfterIt) {
  Stream s("s");
  std::vector<std::string> order;
  std::mutex order_mutex;
  auto push = [&](const char* what) {
    std::lock_guard<std::mutex> lock(order_mutex);
    order.push_back(what);
  };
  Event e;
  auto first = [&] {
    std::thread other([&] {
      s.enqueue("second", [&] { push("second"); });
      e.record(s);
    });
    other.join();
    std::this_thread::sleep_for(20ms);  // time enough for a worker to run "second" too early
    EXPECT_FALSE(e.query());
    push("first");
  };
  EXPECT_EQ(s.run_inline_if_idle("first", first), 1u);
  e.synchronize();
  std::lock_guard<std::mutex> lock(order_mutex);
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second"}));
}

// Held for a fork, the stream runs nothing inline; a hold waits for an inline task to end.
TEST(StreamTest, HoldForForkWaitsForAnInlineTaskAndStopsInlineRuns) {
  Stream s("s");
  std::atomic<bool> started{false}, held{false};
  auto slow = [&] {
    started = true;
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(held.load());
  };
  std::thread runner([&] { EXPECT_EQ(s.run_inline_if_idle("slow", slow), 1u); });
  while (!started.load()) std::this_thread::yield();
  s.hold_for_fork();
  held = true;
  EXPECT_EQ(s.completed(), 1u);
  bool ran = false;
  auto work = [&] { ran = true; };
  EXPECT_EQ(s.run_inline_if_idle("held", work), 0u);
  EXPECT_FALSE(ran);
  s.release_after_fork();
  runner.join();
}

// A stream whose work all ran inline has no worker; held for a fork, it works in the child.
TEST(StreamTest, AStreamThatRanOnlyInlineWorksInAChildForkedWhileHeld) {
  Stream s("s");
  std::atomic<int> value{0};
  auto one = [&] { value = 1; };
  ASSERT_EQ(s.run_inline_if_idle("inline op", one), 1u);
  s.hold_for_fork();
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(10);  // a hang fails the test instead of stopping it
    s.enqueue("child op", [&] { value = 2; });
    s.synchronize();
    auto three = [&] { value = 3; };
    const bool inline_ran = s.run_inline_if_idle("child inline op", three) != 0;
    _exit(value.load() == 3 && inline_ran ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  s.release_after_fork();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(value.load(), 1);
}

// An event recorded on an idle stream is reached at once, with its completion time set.
TEST(EventTest, RecordOnAnIdleStreamIsReachedAtOnce) {
  Stream s("s");
  Event start, end;
  start.record(s);
  EXPECT_TRUE(start.query());
  end.record(s);
  EXPECT_TRUE(end.query());
  EXPECT_GE(end.elapsed_ms_since(start), 0.0);
  EXPECT_EQ(s.completed(), 2u);
}

TEST(EventTest, QueryElapsedAndNeverRecorded) {
  Stream s("s");
  Event start, end, never;
  EXPECT_TRUE(never.query());
  EXPECT_FALSE(never.recorded());
  start.record(s);
  s.enqueue("sleep", [] { std::this_thread::sleep_for(20ms); });
  end.record(s);
  end.synchronize();
  EXPECT_TRUE(end.query());
  EXPECT_GE(end.elapsed_ms_since(start), 19.0);
  EXPECT_THROW(never.elapsed_ms_since(start), std::logic_error);
}

TEST(EventTest, ModeledElapsedIsTheDifferenceOfTheRecordedDeviceTimes) {
  Stream s("s");
  Event start, end, never;
  start.record(s, 0.25);
  end.record(s, 0.75);
  end.synchronize();
  EXPECT_DOUBLE_EQ(end.modeled_elapsed_ms_since(start), 500.0);  // (0.75 - 0.25) s in ms
  EXPECT_DOUBLE_EQ(start.modeled_s(), 0.25);
  EXPECT_THROW(never.modeled_elapsed_ms_since(start), std::logic_error);
}

TEST(EventTest, BlockUsesTheRecordAsOfTheCall) {
  Stream a("a"), b("b");
  Event e;
  std::atomic<bool> release{false};
  e.record(a);
  a.synchronize();
  // A later record on a held stream must not hold b, which blocked before it.
  e.block(b);
  a.enqueue("gate", [&] {
    while (!release.load()) std::this_thread::yield();
  });
  e.record(a);
  std::atomic<bool> b_ran{false};
  b.enqueue("run", [&] { b_ran = true; });
  b.synchronize();
  EXPECT_TRUE(b_ran.load());
  EXPECT_FALSE(e.query());
  release = true;
  e.synchronize();
  EXPECT_TRUE(e.query());
}

}  // namespace
}  // namespace vtrn::runtime
