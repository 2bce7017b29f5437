#include "vtrn/torch/aten_mkl.h"

#include <dlfcn.h>

#include <cstdint>

#include "vtrn/runtime/aten_matmul.h"
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
void install_one(void* lib, const char* symbol, std::vector<std::string>& installed) {
  auto* fn = reinterpret_cast<VmlFn>(dlsym(lib, symbol));
  if (fn == nullptr) return;
  g_vml[static_cast<int>(F)] = fn;
  au::install(F, &call<F>);
  installed.emplace_back(symbol);
}

}  // namespace

std::vector<std::string> install_aten_mkl() {
  std::vector<std::string> installed;
  // vtrn._C links libtorch_cpu, so it is loaded; RTLD_NOLOAD only finds it.
  void* lib = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return installed;
  install_one<au::Fn::kExp>(lib, "vmsExp", installed);
  install_one<au::Fn::kLog>(lib, "vmsLn", installed);
  install_one<au::Fn::kSqrt>(lib, "vmsSqrt", installed);
  install_one<au::Fn::kSin>(lib, "vmsSin", installed);
  install_one<au::Fn::kCos>(lib, "vmsCos", installed);
  install_one<au::Fn::kTanh>(lib, "vmsTanh", installed);
  // cpublas::gemm's float32 BLAS call (Fortran interface) and mkl_gemm_batched's.
  namespace am = runtime::aten_matmul;
  if (auto* sgemm = reinterpret_cast<am::Sgemm>(dlsym(lib, "sgemm_"))) {
    auto* batch = reinterpret_cast<am::SgemmBatch>(dlsym(lib, "cblas_sgemm_batch"));
    am::install(sgemm, batch);
    installed.emplace_back("sgemm_");
    if (batch != nullptr) installed.emplace_back("cblas_sgemm_batch");
  }
  dlclose(lib);  // drops the reference RTLD_NOLOAD took; _C's own keeps it loaded
  return installed;
}

}  // namespace vtrn::torch_adapter
