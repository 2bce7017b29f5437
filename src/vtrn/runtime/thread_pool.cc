#include "vtrn/runtime/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime {
namespace {

// How long the caller, done with its own tasks, spins on the others' end before it parks.
// Waking a parked thread costs tens to hundreds of microseconds on a virtual machine (80 us on
// average here, with 3 ms outliers): longer than the last task of a typical kernel takes.
constexpr auto kCallerSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class Pool {
 public:
  // Threads are detached and parked forever: joining them at exit would race with static
  // destruction, and a parked thread costs nothing.
  void run(int n, const std::function<void(int)>& fn) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || n <= 1) return serial(n, fn);
    start_threads();
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_ = n;
      next_ = 0;
      pending_ = n;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    work();
    const auto until = std::chrono::steady_clock::now() + kCallerSpin;
    for (int i = 1; pending_.load(std::memory_order_acquire) != 0; ++i) {
      cpu_relax();
      if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
    }
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static void serial(int n, const std::function<void(int)>& fn) {
    for (int i = 0; i < n; ++i) fn(i);
  }

  void start_threads() {
    const int want = executor_threads() - 1;
    while (static_cast<int>(threads_started_) < want) {
      const int index = static_cast<int>(threads_started_);
      std::thread([this, index] { loop(index); }).detach();
      ++threads_started_;
    }
  }

  // Thread |index| of the pool (the caller being the budget's first thread) takes part only
  // while the budget has room for it: a budget lowered after the threads started is kept.
  void loop(int index) {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_ != seen && fn_ != nullptr; });
        seen = generation_;
      }
      if (index + 1 >= executor_threads()) continue;
      work();
    }
  }

  // Takes tasks until none are left.
  void work() {
    for (;;) {
      int i;
      const std::function<void(int)>* fn;
      {
        // The index and the job it belongs to are taken together: a thread late from one
        // job must not run a task of the next.
        std::lock_guard<std::mutex> lock(mu_);
        if (fn_ == nullptr || next_ >= n_) return;
        i = next_++;
        fn = fn_;
      }
      std::exception_ptr error;
      try {
        (*fn)(i);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (error && !error_) error_ = error;
      if (--pending_ == 0) done_.notify_all();
    }
  }

  std::mutex busy_;  // one call at a time uses the threads
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  int n_ = 0;
  int next_ = 0;
  std::atomic<int> pending_{0};  // written under mu_, also read without it
  std::uint64_t generation_ = 0;
  std::exception_ptr error_;
  unsigned threads_started_ = 0;
};

Pool* pool = nullptr;
std::once_flag pool_once;

Pool& the_pool() {
  std::call_once(pool_once, [] {
    pool = new Pool();
    // The child of a fork has none of the parent's threads: give it a fresh pool.
    pthread_atfork(nullptr, nullptr, [] { pool = new Pool(); });
  });
  return *pool;
}

}  // namespace

void parallel_for(int n, const std::function<void(int)>& fn) { the_pool().run(n, fn); }

void parallel_ranges(std::int64_t n, std::int64_t grain, int threads,
                     const std::function<void(std::int64_t, std::int64_t)>& fn) {
  const std::int64_t pieces = std::min<std::int64_t>(
      static_cast<std::int64_t>(threads) * kPiecesPerThread, n / std::max<std::int64_t>(grain, 1));
  if (threads <= 1 || pieces <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  parallel_for(static_cast<int>(pieces), [&](int i) {
    const std::int64_t lo = n * i / pieces, hi = n * (i + 1) / pieces;
    if (lo < hi) fn(lo, hi);
  });
}

}  // namespace vtrn::runtime
