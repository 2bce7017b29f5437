// Waiting without the GIL.
//
// Queued work may need the GIL on its stream's worker: dropping the last C++ reference to a
// tensor or storage that Python also holds decrefs its Python object. A thread that holds the
// GIL while it waits for such work, or for a lock whose holder may be waiting for the GIL,
// deadlocks the process, and Ctrl-C cannot reach it. Every wait in the adapter therefore runs
// without the GIL, as CUDA's waits do (torch releases the GIL around cudaStreamSynchronize).
//
// Promises:
//  * WithoutGil releases the GIL for its lifetime when the calling thread holds it, and does
//    nothing otherwise (a thread Python never ran, or one that already released it).
//  * lock_without_gil() takes |mutex| at once when it is free, and otherwise releases the GIL
//    while it blocks.
#pragma once

#include <mutex>

namespace vtrn::torch_adapter {

class WithoutGil {
 public:
  WithoutGil();
  ~WithoutGil();
  WithoutGil(const WithoutGil&) = delete;
  WithoutGil& operator=(const WithoutGil&) = delete;

 private:
  void* saved_ = nullptr;  // the released PyThreadState, or null when nothing was released
};

/// Locks |mutex|; while it blocks, the GIL is released.
template <typename Mutex>
std::unique_lock<Mutex> lock_without_gil(Mutex& mutex) {
  std::unique_lock<Mutex> lock(mutex, std::try_to_lock);
  if (!lock.owns_lock()) {
    const WithoutGil no_gil;
    lock.lock();
  }
  return lock;
}

}  // namespace vtrn::torch_adapter
