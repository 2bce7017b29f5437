#include "vtrn/runtime/aten_unary.h"

#include <algorithm>
#include <atomic>

namespace vtrn::runtime::aten_unary {
namespace {

std::atomic<Impl> g_impls[kFnCount];

}  // namespace

void install(Fn f, Impl impl) {
  g_impls[static_cast<int>(f)].store(impl, std::memory_order_release);
}

bool installed(Fn f) {
  return g_impls[static_cast<int>(f)].load(std::memory_order_acquire) != nullptr;
}

bool apply(Fn f, const float* x, float* y, std::int64_t n) {
  const Impl impl = g_impls[static_cast<int>(f)].load(std::memory_order_acquire);
  if (impl == nullptr) return false;
  // VML takes a 32-bit count (each element is computed alone, so the split changes nothing).
  constexpr std::int64_t kMax = std::int64_t{1} << 30;
  for (std::int64_t i = 0; i < n; i += kMax) impl(std::min(kMax, n - i), x + i, y + i);
  return true;
}

}  // namespace vtrn::runtime::aten_unary
