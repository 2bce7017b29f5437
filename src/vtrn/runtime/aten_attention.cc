#include "vtrn/runtime/aten_attention.h"

#include <atomic>

namespace vtrn::runtime::aten_attention {
namespace {

std::atomic<Kernel> g_kernel{nullptr};

}  // namespace

void install(Kernel kernel) { g_kernel.store(kernel); }

Kernel installed() { return g_kernel.load(); }

}  // namespace vtrn::runtime::aten_attention
