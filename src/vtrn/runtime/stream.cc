#include "vtrn/runtime/stream.h"

namespace vtrn::runtime {

Stream::Stream(std::string label) : label_(std::move(label)) {}

Stream::~Stream() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Stream::enqueue(const char* op, std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
    tasks_.push_back(Task{op, std::move(work)});
    enqueued_.fetch_add(1, std::memory_order_release);
  }
  work_ready_.notify_one();
}

void Stream::run() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and everything ran
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    std::string error;
    try {
      task.work();
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
    task.work = nullptr;  // release what the task captured before reporting completion
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error.empty() && error_.empty()) {
        error_ = "queued op '" + std::string(task.op) + "' on " + label_ + " failed: " + error;
      }
      completed_.fetch_add(1, std::memory_order_release);
    }
    work_done_.notify_all();
  }
}

bool Stream::query() const {
  return completed_.load(std::memory_order_acquire) == enqueued_.load(std::memory_order_acquire);
}

void Stream::wait_until_done(uint64_t target) {
  if (completed_.load(std::memory_order_acquire) >= target) return;
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

void Event::record(Stream& stream) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    generation = ++state_->recorded;
  }
  stream.enqueue("event record", [state = state_, generation] {
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      if (generation > state->completed) {
        state->completed = generation;
        state->completed_at = Clock::now();
      }
    }
    state->done.notify_all();
  });
}

void Event::block(Stream& stream) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    generation = state_->recorded;
    if (state_->completed >= generation) return;  // nothing to wait for
  }
  stream.enqueue("event wait", [state = state_, generation] {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->done.wait(lock, [&] { return state->completed >= generation; });
  });
}

bool Event::query() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->completed >= state_->recorded;
}

void Event::synchronize() const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  const uint64_t generation = state_->recorded;
  state_->done.wait(lock, [&] { return state_->completed >= generation; });
}

bool Event::recorded() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->recorded > 0;
}

double Event::elapsed_ms_since(const Event& start) const {
  Clock::time_point begin, end;
  {
    std::lock_guard<std::mutex> lock(start.state_->mutex);
    if (start.state_->recorded == 0 || start.state_->completed < start.state_->recorded) {
      throw std::logic_error("elapsed_time: the start event has not been recorded and completed; "
                             "record it and synchronize first");
    }
    begin = start.state_->completed_at;
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->recorded == 0 || state_->completed < state_->recorded) {
      throw std::logic_error("elapsed_time: the end event has not been recorded and completed; "
                             "record it and synchronize first");
    }
    end = state_->completed_at;
  }
  return std::chrono::duration<double, std::milli>(end - begin).count();
}

}  // namespace vtrn::runtime
