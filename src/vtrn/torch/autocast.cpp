// torch.autocast(device_type="neuron"): the same op lists and casting policies as CUDA
// (lower-precision ops run in the autocast dtype, precision-sensitive ops in float32), which
// is what TorchNeuron documents ("Automatic datatype conversion follows PyTorch CUDA
// conventions").
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

#define VTRN_AUTOCAST_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define VTRN_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(VTRN_AUTOCAST_LOWER_PRECISION)
  AT_FORALL_FP32(VTRN_AUTOCAST_FP32)
}

}  // namespace
