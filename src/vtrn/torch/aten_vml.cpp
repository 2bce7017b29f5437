#include "vtrn/torch/aten_vml.h"

#include <dlfcn.h>

#include <cstdint>

#include "vtrn/runtime/aten_unary.h"

namespace vtrn::torch_adapter {
namespace {

namespace au = runtime::aten_unary;

// MKL's `void vmsExp(const MKL_INT n, const float* a, float* r, const MKL_INT64 mode)`, LP64
// (MKL_INT is int), as libtorch_cpu links it.
using VmlFn = void (*)(int n, const float* a, float* r, std::int64_t mode);

// The mode ATen's vml.h passes: VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE
// (mkl_vml_defines.h: 0x2, 0x140000, 0x100).
constexpr std::int64_t kAtenVmlMode = 0x2 | 0x140000 | 0x100;

VmlFn g_vml[au::kFnCount];

template <au::Fn F>
void call(std::int64_t n, const float* x, float* y) {
  g_vml[static_cast<int>(F)](static_cast<int>(n), x, y, kAtenVmlMode);
}

template <au::Fn F>
bool install_one(void* lib, const char* symbol) {
  auto* fn = reinterpret_cast<VmlFn>(dlsym(lib, symbol));
  if (fn == nullptr) return false;
  g_vml[static_cast<int>(F)] = fn;
  au::install(F, &call<F>);
  return true;
}

}  // namespace

int install_aten_vml() {
  // vtrn._C links libtorch_cpu, so it is loaded; RTLD_NOLOAD only finds it.
  void* lib = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return 0;
  int n = 0;
  n += install_one<au::Fn::kExp>(lib, "vmsExp");
  n += install_one<au::Fn::kLog>(lib, "vmsLn");
  n += install_one<au::Fn::kSqrt>(lib, "vmsSqrt");
  n += install_one<au::Fn::kSin>(lib, "vmsSin");
  n += install_one<au::Fn::kCos>(lib, "vmsCos");
  n += install_one<au::Fn::kTanh>(lib, "vmsTanh");
  dlclose(lib);  // drops the reference RTLD_NOLOAD took; _C's own keeps it loaded
  return n;
}

}  // namespace vtrn::torch_adapter
