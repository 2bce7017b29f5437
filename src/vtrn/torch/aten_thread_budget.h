// The thread count the installed ATen kernels (aten_*.cpp) run at. ATen's CPU kernels split
// their work by at::get_num_threads(), and some round by the split: per-thread partial sums
// (layer and batch norm's parameter gradients), a vector loop's scalar tail at the end of each
// thread's chunk (tanh GELU), oneDNN or ATen's own convolution chosen by the count. The kernels
// run on a stream's worker thread, whose OpenMP thread count is its own; they take the thread
// budget torch.set_num_threads gave (runtime::executor_threads()) first, the count the CPU's
// caller runs them at.
#pragma once

#include <ATen/Parallel.h>

namespace vtrn::torch_adapter {

inline void follow_thread_budget(int threads) {
  if (at::get_num_threads() != threads) at::set_num_threads(threads);
}

}  // namespace vtrn::torch_adapter
