// In-order execution queues ("streams") and events, with CUDA's semantics.
//
// Promises:
//  * enqueue() returns at once; the work runs on the stream's own worker thread, in the order
//    it was enqueued. Work on two streams is ordered only by events.
//  * run_inline_if_idle() runs work on the calling thread instead, when the stream is idle
//    (nothing queued or running, not held for a fork): to everything else it is a task that was
//    enqueued and ran at once. It takes the next sequence number, a throw is kept for the next
//    synchronize() as a queued task's is, running_on() is the stream meanwhile, and work
//    enqueued meanwhile by another thread runs after it. A stream whose work all ran inline
//    never starts a worker. Work that waits for anything (an event, a gate) must be enqueued.
//  * Handoffs spin briefly before they sleep: a worker that finished its task polls for the
//    next for a few microseconds, and so does a thread waiting for a task to complete, so that
//    back-to-back handoffs cost no futex sleep and wake-up. The spin yields the core every few
//    polls, so a machine with more runnable threads than cores loses little to it.
//  * A task that throws does not stop the stream. Its error, naming the op, is kept and thrown
//    by the next synchronize() of that stream (or of its device), then forgotten: the stream
//    stays usable.
//  * Event::record() marks the point reached by the stream's work enqueued so far;
//    Event::block() makes a stream wait for the most recent record, as it stood when block()
//    was called. An event never recorded is complete. A record also keeps the modeled device
//    time its caller gives (the stream's DeviceClock time), for modeled_elapsed_ms_since().
//  * A task owns what it captures and destroys it on the worker thread after running.
//  * A forked child runs the work its parent queued and had not started. hold_for_fork() lets
//    the worker finish (and release) its task and keeps it from starting another, so a fork
//    made while every stream is held finds each stream between tasks; an event wait, which
//    changes nothing, is not waited for and runs again in the child. A task that was running
//    at a fork made without holding the stream cannot finish in the child (its worker is
//    gone): it counts as done there, with an error naming it, raised by the child's next
//    synchronize.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace vtrn::runtime {

/// The error a queued task raised, surfaced at a synchronization point.
class QueuedOpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Stream {
 public:
  /// |label| names the stream in errors, e.g. "neuron:0 stream 0".
  explicit Stream(std::string label);
  ~Stream();  ///< Waits for queued work, then stops the worker.
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Queues |work|; |op| names it in errors ("aten::fill_.Scalar"). |op| must outlive the
  /// task (a string literal, or a name kept by the caller). Returns the task's sequence
  /// number: the stream has run it once completed() reaches that number.
  uint64_t enqueue(const char* op, std::function<void()> work);

  /// Tasks run so far.
  uint64_t completed() const { return completed_.load(std::memory_order_acquire); }
  /// Tasks enqueued so far: the sequence number of the latest one.
  uint64_t enqueued() const { return enqueued_.load(std::memory_order_acquire); }

  /// Waits until the task numbered |sequence| has run.
  void wait_until_done(uint64_t sequence);

  /// True when everything enqueued so far has run.
  bool query() const;

  /// Waits for everything enqueued so far, then throws the first error a task raised since
  /// the last synchronize (QueuedOpError), if any.
  void synchronize();

  const std::string& label() const { return label_; }

  /// Runs |work| (callable with no arguments) at once on the calling thread when the stream is
  /// idle, as the promises above say. Returns its sequence number, or 0 when the stream was
  /// not idle and nothing ran (enqueue the work then).
  template <typename F>
  uint64_t run_inline_if_idle(const char* op, F& work) {
    return run_inline(
        op, [](void* f) { (*static_cast<F*>(f))(); }, &work);
  }

  /// The stream whose worker is the calling thread, or nullptr on any other thread.
  static const Stream* running_on();

  /// For fork(): waits until the worker is between tasks (or in an event wait), and keeps it
  /// from starting another until release_after_fork(). Enqueueing still works meanwhile.
  void hold_for_fork();
  /// Lets the worker run again (in the parent; a child's worker starts afresh).
  void release_after_fork();

 private:
  struct Task {
    const char* op;
    std::function<void()> work;
    bool restartable = false;  ///< changes nothing (an event wait): may run again
  };

  friend class Event;  // queues its waits as restartable tasks
  uint64_t enqueue_task(Task task);
  uint64_t run_inline(const char* op, void (*call)(void*), void* work);
  void record_error_locked(const char* op, const std::string& error);
  void run();
  void restart_after_fork();
  void recover_from_fork();
  void start_worker_locked();

  std::string label_;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::deque<Task> tasks_;
  std::atomic<uint64_t> enqueued_{0};
  std::atomic<uint64_t> completed_{0};
  std::string error_;  ///< first error since the last synchronize; empty if none
  /// The task the worker is running, if any: read only in a forked child.
  std::atomic<const char*> running_{nullptr};
  Task current_;       ///< the task the worker took; touched by the worker alone while busy_
  bool busy_ = false;  ///< the worker took a task and has not yet reported it done
  bool held_ = false;  ///< hold_for_fork(): the worker starts no task
  /// A run_inline_if_idle() task is running: the worker starts nothing meanwhile.
  std::atomic<bool> inline_running_{false};
  bool stopping_ = false;
  std::thread worker_;  ///< started on the first enqueue (and again in a forked child)
  /// Fork generation the worker was started in (or the stream was made or recovered in).
  uint64_t worker_generation_ = 0;
};

class Event {
 public:
  using Clock = std::chrono::steady_clock;

  /// Marks the current end of |stream|'s queue; the event completes when the stream gets there.
  /// |modeled_s| is the modeled device time of that point.
  void record(Stream& stream, double modeled_s = 0);

  /// Makes |stream| wait for the most recent record before running later work.
  void block(Stream& stream);

  /// True when the most recent record has been reached (or there was none).
  bool query() const;

  /// Waits on the host for the most recent record.
  void synchronize() const;

  /// Milliseconds between the completion of |start| and of this event. Both must have been
  /// recorded and completed; throws std::logic_error otherwise.
  double elapsed_ms_since(const Event& start) const;
  /// The same between the modeled device times given to the two records.
  double modeled_elapsed_ms_since(const Event& start) const;
  /// The modeled device time of the most recent record (0 when never recorded).
  double modeled_s() const;

  bool recorded() const;

 private:
  /// The most recent record: the stream and the sequence number of its marker task.
  struct Point {
    Stream* stream = nullptr;
    uint64_t sequence = 0;
    bool reached() const { return stream == nullptr || stream->completed() >= sequence; }
  };
  struct State {
    std::mutex mutex;
    Point point;
    uint64_t generation = 0;           ///< records so far
    Clock::time_point completed_at{};  ///< when the most recent record was reached
    double modeled_s = 0;              ///< modeled device time of the most recent record
  };
  /// Checks that the most recent record was reached; throws std::logic_error naming |which|.
  void check_completed(const char* which) const;
  Point point() const;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace vtrn::runtime
