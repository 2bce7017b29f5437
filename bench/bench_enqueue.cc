// The cost of enqueuing an empty task on a runtime stream, against calling the same empty
// function directly, in one process. Prints ns per task for each and their ratio.
#include <chrono>
#include <cstdio>
#include <functional>

#include "vtrn/runtime/stream.h"

namespace {

using Clock = std::chrono::steady_clock;

double ns_per(Clock::duration d, int n) {
  return std::chrono::duration<double, std::nano>(d).count() / n;
}

}  // namespace

int main() {
  constexpr int kTasks = 200000;
  volatile int sink = 0;
  std::function<void()> empty = [&sink] { sink = sink + 1; };

  double direct_best = 1e30, queued_best = 1e30, drained_best = 1e30;
  vtrn::runtime::Stream stream("bench stream");
  for (int round = 0; round < 5; ++round) {
    auto t0 = Clock::now();
    for (int i = 0; i < kTasks; ++i) empty();
    direct_best = std::min(direct_best, ns_per(Clock::now() - t0, kTasks));

    t0 = Clock::now();
    for (int i = 0; i < kTasks; ++i) stream.enqueue("empty", empty);
    const auto enqueued = Clock::now();
    stream.synchronize();
    queued_best = std::min(queued_best, ns_per(enqueued - t0, kTasks));
    drained_best = std::min(drained_best, ns_per(Clock::now() - t0, kTasks));
  }
  std::printf("empty task, %d per round, best of 5\n", kTasks);
  std::printf("  direct call          %8.1f ns/task\n", direct_best);
  std::printf("  enqueue (host side)  %8.1f ns/task\n", queued_best);
  std::printf("  enqueue + run        %8.1f ns/task\n", drained_best);
  std::printf("  ratio enqueue/direct: %.0fx\n", queued_best / direct_best);
  return 0;
}
