#include "vtrn/runtime/aten_attention.h"

#include "vtrn/runtime/installed_kernels.h"

namespace vtrn::runtime::aten_attention {
namespace {

InstalledKernels<Kernel, BackwardKernel> g_installed;

}  // namespace

void install(Kernel kernel, BackwardKernel backward) { g_installed.install(kernel, backward); }

Kernel installed() { return g_installed.forward(); }

BackwardKernel installed_backward() { return g_installed.backward(); }

}  // namespace vtrn::runtime::aten_attention
