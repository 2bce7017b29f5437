#include "vtrn/runtime/stream.h"

#include <pthread.h>

#include <chrono>
#include <new>
#include <thread>

namespace vtrn::runtime {

namespace {

// A forked child has none of its parent's threads: a stream whose worker was started before
// the fork starts a new one on its next enqueue instead of waiting forever.
std::atomic<uint64_t> fork_generation{0};

uint64_t current_fork_generation() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr,
                   [] { fork_generation.fetch_add(1, std::memory_order_relaxed); });
    return true;
  }();
  (void)registered;
  return fork_generation.load(std::memory_order_relaxed);
}

thread_local const Stream* tls_worker_of = nullptr;

// How long a handoff polls before it sleeps on a condition variable: longer than the gap
// between two small ops a Python loop issues, far shorter than a scheduler time slice.
constexpr auto kSpin = std::chrono::microseconds(30);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls |ready| for up to kSpin; true once it holds, false when the time ran out.
template <typename Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (ready()) return true;
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::yield();  // a core another runnable thread needs is given up
    } else {
      cpu_relax();
    }
  }
}

}  // namespace

const Stream* Stream::running_on() { return tls_worker_of; }

Stream::Stream(std::string label)
    : label_(std::move(label)), worker_generation_(current_fork_generation()) {}

Stream::~Stream() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Stream::restart_after_fork() {
  // Only the forking thread survives a fork: the parent's worker does not exist here, and the
  // mutex and condition variables may still hold its state (a waiter that will never wake).
  // Nothing else can use this stream yet, so rebuild them in place.
  new (&worker_) std::thread();
  new (&mutex_) std::mutex();
  new (&work_ready_) std::condition_variable();
  new (&work_done_) std::condition_variable();
}

void Stream::start_worker_locked() {
  worker_ = std::thread([this] { run(); });
  worker_generation_ = current_fork_generation();
}

void Stream::recover_from_fork() {
  const uint64_t generation = current_fork_generation();
  if (worker_generation_ == generation) return;
  // Also a stream that never started a worker (its work all ran inline): it may have been held
  // for the fork, or running a task inline on another thread.
  restart_after_fork();
  std::lock_guard<std::mutex> lock(mutex_);
  worker_generation_ = generation;
  // Every task not in the queue any more ran in the parent, or was running there (and then
  // cannot finish here): count it done, so that waits in the child return.
  const uint64_t taken = enqueued_.load(std::memory_order_relaxed) - tasks_.size();
  uint64_t done = taken;
  if (busy_ && current_.restartable) {
    tasks_.push_front(std::move(current_));  // an event wait: it waits again here
    --done;
  } else if (const char* op = running_.exchange(nullptr); op != nullptr && error_.empty()) {
    // The worker's task, or one another thread was running inline.
    error_ = "queued op '" + std::string(op) + "' on " + label_ +
             " was running when the process forked: its result is missing in the child. "
             "Synchronize before fork() when a child reads the device.";
  }
  running_.store(nullptr, std::memory_order_relaxed);
  busy_ = held_ = false;
  inline_running_.store(false, std::memory_order_relaxed);
  completed_.store(done, std::memory_order_release);
  if (!tasks_.empty()) start_worker_locked();  // work the parent queued before the fork
}

uint64_t Stream::enqueue(const char* op, std::function<void()> work) {
  return enqueue_task(Task{op, std::move(work)});
}

uint64_t Stream::enqueue_task(Task task) {
  recover_from_fork();
  uint64_t sequence;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!worker_.joinable()) start_worker_locked();
    tasks_.push_back(std::move(task));
    sequence = enqueued_.fetch_add(1, std::memory_order_release) + 1;
  }
  work_ready_.notify_one();
  return sequence;
}

uint64_t Stream::run_inline(const char* op, void (*call)(void*), void* work) {
  recover_from_fork();
  if (completed_.load(std::memory_order_acquire) != enqueued_.load(std::memory_order_acquire))
    return 0;  // busy: no need for the lock to tell
  uint64_t sequence;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_ || held_ || inline_running_.load(std::memory_order_relaxed) || !tasks_.empty())
      return 0;
    inline_running_.store(true, std::memory_order_relaxed);
    sequence = enqueued_.fetch_add(1, std::memory_order_release) + 1;
  }
  running_.store(op, std::memory_order_relaxed);
  const Stream* outer = tls_worker_of;
  tls_worker_of = this;
  std::string error;
  try {
    call(work);
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  tls_worker_of = outer;
  running_.store(nullptr, std::memory_order_relaxed);
  bool queued_meanwhile;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error.empty()) record_error_locked(op, error);
    inline_running_.store(false, std::memory_order_relaxed);
    completed_.fetch_add(1, std::memory_order_release);
    queued_meanwhile = !tasks_.empty();
  }
  if (queued_meanwhile) work_ready_.notify_one();
  work_done_.notify_all();
  return sequence;
}

void Stream::record_error_locked(const char* op, const std::string& error) {
  if (error_.empty())
    error_ = "queued op '" + std::string(op) + "' on " + label_ + " failed: " + error;
}

void Stream::run() {
  tls_worker_of = this;
  for (;;) {
    // The next task often comes within microseconds: poll before sleeping.
    spin_until([this] {
      return enqueued_.load(std::memory_order_acquire) !=
             completed_.load(std::memory_order_acquire);
    });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] {
        return !inline_running_.load(std::memory_order_relaxed) &&
               (stopping_ || (!tasks_.empty() && !held_));
      });
      if (tasks_.empty()) return;  // stopping, and everything ran
      current_ = std::move(tasks_.front());
      tasks_.pop_front();
      busy_ = true;
      running_.store(current_.op, std::memory_order_relaxed);
    }
    std::string error;
    try {
      current_.work();
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
    running_.store(nullptr, std::memory_order_relaxed);
    current_.work = nullptr;  // release what the task captured before reporting completion
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error.empty()) record_error_locked(current_.op, error);
      busy_ = false;
      completed_.fetch_add(1, std::memory_order_release);
    }
    work_done_.notify_all();
  }
}

void Stream::hold_for_fork() {
  recover_from_fork();
  std::unique_lock<std::mutex> lock(mutex_);
  held_ = true;
  work_done_.wait(lock, [this] {
    return (!busy_ || current_.restartable) && !inline_running_.load(std::memory_order_relaxed);
  });
}

void Stream::release_after_fork() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ = false;
  }
  work_ready_.notify_all();
}

bool Stream::query() const {
  return completed_.load(std::memory_order_acquire) == enqueued_.load(std::memory_order_acquire);
}

void Stream::wait_until_done(uint64_t target) {
  recover_from_fork();
  auto done = [&] { return completed_.load(std::memory_order_acquire) >= target; };
  if (done() || spin_until(done)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [&] { return completed_.load(std::memory_order_acquire) >= target; });
}

void Stream::synchronize() {
  wait_until_done(enqueued_.load(std::memory_order_acquire));
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error.swap(error_);
  }
  if (!error.empty()) throw QueuedOpError(error);
}

Event::Point Event::point() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->point;
}

void Event::record(Stream& stream, double modeled_s) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const uint64_t generation = ++state_->generation;
  state_->modeled_s = modeled_s;
  // An idle stream reaches the point at once: the marker runs here, under the lock it holds.
  auto mark_now = [this] { state_->completed_at = Clock::now(); };
  uint64_t sequence = stream.run_inline_if_idle("event record", mark_now);
  if (sequence == 0) {
    // Holding the state lock across enqueue keeps (point, generation) consistent; the marker
    // takes the lock only when it runs, on the worker.
    sequence = stream.enqueue("event record", [state = state_, generation] {
      std::lock_guard<std::mutex> marker_lock(state->mutex);
      if (state->generation == generation) state->completed_at = Clock::now();
    });
  }
  state_->point = Point{&stream, sequence};
}

void Event::block(Stream& stream) {
  const Point target = point();
  if (target.reached()) return;  // nothing to wait for
  stream.enqueue_task(Stream::Task{"event wait",
                                   [target] { target.stream->wait_until_done(target.sequence); },
                                   /*restartable=*/true});
}

bool Event::query() const { return point().reached(); }

void Event::synchronize() const {
  const Point target = point();
  if (!target.reached()) target.stream->wait_until_done(target.sequence);
}

bool Event::recorded() const { return point().stream != nullptr; }

void Event::check_completed(const char* which) const {
  const Point p = point();
  if (p.stream == nullptr || !p.reached()) {
    throw std::logic_error(
        std::string("elapsed_time: the ") + which +
        " event has not been recorded and completed; record it and synchronize first");
  }
}

double Event::elapsed_ms_since(const Event& start) const {
  start.check_completed("start");
  check_completed("end");
  auto completed_at = [](const Event& e) {
    std::lock_guard<std::mutex> lock(e.state_->mutex);
    return e.state_->completed_at;
  };
  return std::chrono::duration<double, std::milli>(completed_at(*this) - completed_at(start))
      .count();
}

double Event::modeled_s() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->modeled_s;
}

double Event::modeled_elapsed_ms_since(const Event& start) const {
  start.check_completed("start");
  check_completed("end");
  return (modeled_s() - start.modeled_s()) * 1e3;
}

}  // namespace vtrn::runtime
