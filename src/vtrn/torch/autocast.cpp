// torch.autocast(device_type="neuron"): the same op lists and casting policies as CUDA
// (lower-precision ops run in the autocast dtype, precision-sensitive ops in float32, the
// reductions and softmaxes compute in float32 through their dtype argument, mixed-dtype ops
// promote to the widest input), and binary_cross_entropy refused, which is what TorchNeuron
// documents ("Automatic datatype conversion follows PyTorch CUDA conventions") and registers.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace at::autocast {
namespace {

// CUDA's message: binary_cross_entropy after a sigmoid is not safe in reduced precision.
Tensor binary_cross_entropy_banned(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                   int64_t) {
  TORCH_CHECK(
      false,
      "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
      "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
      "In this case, combine the two layers using "
      "torch.nn.functional.binary_cross_entropy_with_logits\n"
      "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
      "safe to autocast.");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

#define VTRN_AUTOCAST_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define VTRN_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define VTRN_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define VTRN_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(VTRN_AUTOCAST_LOWER_PRECISION)
  AT_FORALL_FP32(VTRN_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(VTRN_AUTOCAST_FP32_SET_OPT_DTYPE)
  // norm does not promote implicitly: fp32_append_dtype passes float32 as its dtype argument.
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(VTRN_AUTOCAST_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN((&binary_cross_entropy_banned)));
}

}  // namespace
}  // namespace at::autocast
