#include "vtrn/runtime/aten_attention.h"

#include <atomic>

namespace vtrn::runtime::aten_attention {
namespace {

std::atomic<Kernel> g_kernel{nullptr};
std::atomic<BackwardKernel> g_backward{nullptr};

}  // namespace

void install(Kernel kernel, BackwardKernel backward) {
  g_kernel.store(kernel);
  g_backward.store(backward);
}

Kernel installed() { return g_kernel.load(); }

BackwardKernel installed_backward() { return g_backward.load(); }

}  // namespace vtrn::runtime::aten_attention
