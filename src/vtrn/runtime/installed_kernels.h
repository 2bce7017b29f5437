// A forward and a backward kernel the torch layer installs for one of the executor's custom
// calls (ATen's own, runtime/aten_*.h): a process-wide pair, stored and read atomically, so that
// installing (at import) or uninstalling (a test) races no call that reads it.
#pragma once

#include <atomic>

namespace vtrn::runtime {

template <typename Forward, typename Backward>
class InstalledKernels {
 public:
  void install(Forward forward, Backward backward) {
    forward_.store(forward);
    backward_.store(backward);
  }
  Forward forward() const { return forward_.load(); }
  Backward backward() const { return backward_.load(); }

 private:
  std::atomic<Forward> forward_{nullptr};
  std::atomic<Backward> backward_{nullptr};
};

}  // namespace vtrn::runtime
