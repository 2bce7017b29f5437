// torch._grouped_mm's argument checks on `neuron`: PyTorch's own (its composite's
// _grouped_mm_validate_inputs, which refuses strides the grouped GEMM kernels cannot read) and
// TorchNeuron's 128-row alignment rule behind TORCH_NEURONX_ATEN_GMM_ALIGN. TorchNeuron's eager
// 2-d x 3-d and 2-d x 2-d kernels process the rows (or K) in blocks of that many, so every
// group must start and end on a block boundary; vtrn computes any grouping exactly, and
// applies the rule only when the variable is set, so that a script that passes here also
// passes on TorchNeuron.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/grouped_mm_checks.h"

#include <cstdlib>
#include <string>

#include <ATen/core/Tensor.h>
#include <ATen/native/GroupedMMUtils.h>

namespace vtrn::torch_adapter {
namespace {

/// TORCH_NEURONX_ATEN_GMM_ALIGN: 0 when unset or empty.
int64_t gmm_align() {
  const char* v = std::getenv("TORCH_NEURONX_ATEN_GMM_ALIGN");
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  TORCH_CHECK_VALUE(*end == '\0' && n > 0, "TORCH_NEURONX_ATEN_GMM_ALIGN must be a positive ",
                    "integer (the row alignment of grouped matmul offsets, 128 on TorchNeuron); ",
                    "got '", v, "'. Unset it to skip the alignment check.");
  return n;
}

void check_alignment(const at::Tensor& a, const at::Tensor& b, const at::Tensor& offs,
                     int64_t align) {
  // The size the offsets split: A's rows (2-d x 3-d) or the contraction (2-d x 2-d).
  const int64_t t = b.dim() == 3 ? a.size(0) : a.size(1);
  TORCH_CHECK_VALUE(t % align == 0, "t must be divisible by ", align);
  const at::Tensor host = offs.cpu();
  const int32_t* o = host.const_data_ptr<int32_t>();
  for (int64_t g = 0; g < host.numel(); ++g) {
    TORCH_CHECK_VALUE(o[g] % align == 0, "offs must be divisible by ", align);
    TORCH_CHECK_VALUE(g == 0 || o[g] >= o[g - 1], "offs must be sorted");
    TORCH_CHECK_VALUE(o[g] >= 0 && o[g] <= t, "offs must be between 0 and ", t);
  }
}

}  // namespace

void check_grouped_mm(const torch::jit::Stack& stack, std::size_t first) {
  // _grouped_mm(Tensor self, Tensor mat2, Tensor? offs=None, Tensor? bias=None,
  //             ScalarType? out_dtype=None)
  const at::Tensor& a = stack[first].toTensor();
  const at::Tensor& b = stack[first + 1].toTensor();
  std::optional<at::Tensor> offs, bias;
  if (!stack[first + 2].isNone()) offs = stack[first + 2].toTensor();
  if (!stack[first + 3].isNone()) bias = stack[first + 3].toTensor();
  std::optional<c10::ScalarType> out_dtype;
  if (!stack[first + 4].isNone()) out_dtype = stack[first + 4].toScalarType();
  at::native::_grouped_mm_validate_inputs(a, b, offs, bias, out_dtype);
  static_cast<void>(at::native::_resolve_grouped_mm_out_dtype(a, b, out_dtype));
  const int64_t align = gmm_align();
  if (align > 0 && a.dim() == 2 && offs.has_value()) check_alignment(a, b, *offs, align);
}

}  // namespace vtrn::torch_adapter
