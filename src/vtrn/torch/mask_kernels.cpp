// The ops of `neuron` whose output size depends on the data: nonzero, masked_select, bincount
// and indexing with a boolean mask (x[mask], x[mask] = v).
//
// A device cannot size an output it has not counted, so each kernel runs as CUDA's does: a
// lowered reduction counts (count_nonzero, max), the host reads the count back (which waits
// for the stream), and a lowered op of static size fills the result (nonzero_static,
// index.Tensor, index_add; lowerings_mask.cc and lowerings_index.cc). A boolean index becomes
// its nonzero() coordinates, one index tensor per mask dimension, as ATen's expandTensors does,
// before the lowered index or index_put_ runs. tril_indices/triu_indices have a size their
// arguments fix: their values are built on the host, the constant a compiled program would
// embed, and copied to the device.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/mask_kernels.h"

#include <algorithm>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/index.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/nonzero_static.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tril_indices.h>
#include <ATen/ops/triu_indices.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "vtrn/torch/eager/metrics.h"
#include "vtrn/torch/op_tracking.h"

namespace vtrn::torch_adapter {
namespace {

/// The number of nonzero elements of |t|, read back from the device.
int64_t count_true(const at::Tensor& t) { return at::count_nonzero(t).item<int64_t>(); }

at::Tensor nonzero_kernel(const at::Tensor& self) {
  VTRN_RECORD_OP("nonzero");
  return at::nonzero_static(self, count_true(self), -1);
}

at::Tensor& nonzero_out_kernel(const at::Tensor& self, at::Tensor& out) {
  VTRN_RECORD_OP("nonzero.out");
  TORCH_CHECK(out.scalar_type() == at::kLong,
              "nonzero: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  const at::Tensor result = nonzero_kernel(self);
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

at::Tensor masked_select_kernel(const at::Tensor& self, const at::Tensor& mask) {
  VTRN_RECORD_OP("masked_select");
  TORCH_CHECK(mask.scalar_type() == at::ScalarType::Bool,
              "masked_select: expected BoolTensor for mask");
  auto [s, m] = at::expand_outplace(self, mask);
  const at::Tensor flat_mask = m->reshape({-1});
  const at::Tensor positions = at::nonzero_static(flat_mask, count_true(flat_mask), -1).view({-1});
  return at::index(s->reshape({-1}), c10::List<std::optional<at::Tensor>>({positions}));
}

at::Tensor& masked_select_out_kernel(const at::Tensor& self, const at::Tensor& mask,
                                     at::Tensor& out) {
  VTRN_RECORD_OP("masked_select.out");
  TORCH_CHECK(mask.scalar_type() == at::ScalarType::Bool,
              "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "masked_select(): self and result must have the same scalar type");
  // The CPU's checks, in its order: an out= that shares memory with itself or an input.
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
  const at::Tensor result = masked_select_kernel(self, mask);
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

at::Tensor bincount_on_cpu(const at::Tensor& self, const std::optional<at::Tensor>& weights,
                           int64_t minlength) {
  count_fallback();
  record_fallback("aten::bincount");
  std::optional<at::Tensor> w;
  if (weights.has_value() && weights->defined()) w = weights->cpu();
  return at::bincount(self.cpu(), w, minlength).to(self.device());
}

at::Tensor bincount_kernel(const at::Tensor& self, const std::optional<at::Tensor>& weights,
                           int64_t minlength) {
  const bool weighted = weights.has_value() && weights->defined();
  // Integer inputs, with real weights or none; the CPU raises the errors of other calls.
  if (!at::isIntegralType(self.scalar_type(), /*includeBool=*/false) || self.dim() != 1 ||
      minlength < 0 ||
      (weighted && (weights->is_complex() || weights->dim() != 1 ||
                    weights->size(0) != self.size(0) || weights->device() != self.device())))
    return bincount_on_cpu(self, weights, minlength);
  VTRN_RECORD_OP("bincount");
  // The CPU sums float32 weights in float32 and any other weights in float64, which the
  // device computes in float32 (its float64 policy).
  const bool float_weights = weighted && weights->scalar_type() == at::kFloat;
  const auto options = self.options().dtype(weighted ? at::kFloat : at::kLong);
  const auto result_dtype = !weighted ? at::kLong : float_weights ? at::kFloat : at::kDouble;
  if (self.numel() == 0) return at::zeros({minlength}, options.dtype(result_dtype));
  const int64_t low = self.min().item<int64_t>();
  TORCH_CHECK(low >= 0, "bincount only supports 1-d non-negative integral inputs.");
  const int64_t size = std::max(self.max().item<int64_t>() + 1, minlength);
  at::Tensor out = at::zeros({size}, options);
  out.index_add_(0, self, weighted ? weights->to(at::kFloat) : at::ones({self.size(0)}, options));
  return float_weights || !weighted ? out : out.to(at::kDouble);
}

at::Tensor tri_indices(bool lower, int64_t row, int64_t col, int64_t offset,
                       std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                       std::optional<at::Device> device, std::optional<bool> pin_memory) {
  const at::Tensor host =
      lower ? at::tril_indices(row, col, offset, dtype, layout, at::Device(at::kCPU), pin_memory)
            : at::triu_indices(row, col, offset, dtype, layout, at::Device(at::kCPU), pin_memory);
  return host.to(c10::device_or_default(device));
}

at::Tensor tril_indices_kernel(int64_t row, int64_t col, int64_t offset,
                               std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory) {
  VTRN_RECORD_OP("tril_indices");
  return tri_indices(true, row, col, offset, dtype, layout, device, pin_memory);
}

at::Tensor triu_indices_kernel(int64_t row, int64_t col, int64_t offset,
                               std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory) {
  VTRN_RECORD_OP("triu_indices");
  return tri_indices(false, row, col, offset, dtype, layout, device, pin_memory);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero", nonzero_kernel);
  m.impl("nonzero.out", nonzero_out_kernel);
  m.impl("masked_select", masked_select_kernel);
  m.impl("masked_select.out", masked_select_out_kernel);
  m.impl("bincount", bincount_kernel);
  m.impl("tril_indices", tril_indices_kernel);
  m.impl("triu_indices", triu_indices_kernel);
}

}  // namespace

bool expand_boolean_indices(torch::jit::Stack& stack, size_t self_pos, bool put) {
  const at::Tensor& self = stack[self_pos].toTensor();
  const c10::IValue& list = stack[self_pos + 1];
  if (!list.isList()) return false;
  const auto indices = list.toOptionalTensorList();
  bool any = false;
  int64_t dim = 0;
  for (const std::optional<at::Tensor>& i : indices) {
    if (i.has_value() && i->defined() && i->scalar_type() == at::kBool) {
      // A 0-d mask, or one whose shape is not self's there: the CPU kernel raises or handles it.
      if (i->dim() == 0 || dim + i->dim() > self.dim() ||
          i->sizes() != self.sizes().slice(dim, i->dim()))
        return false;
      any = true;
      dim += i->dim();
    } else {
      ++dim;
    }
  }
  if (!any) return false;
  if (put) {
    // One mask and one value: the lowered index_put_ selects without counting.
    const at::Tensor& values = stack[self_pos + 2].toTensor();
    if (indices.size() == 1 && values.numel() == 1) return false;
  }
  c10::List<std::optional<at::Tensor>> expanded;
  for (const std::optional<at::Tensor>& i : indices) {
    if (i.has_value() && i->defined() && i->scalar_type() == at::kBool) {
      const at::Tensor coords = at::nonzero(*i);
      for (int64_t k = 0; k < i->dim(); ++k) expanded.push_back(coords.select(1, k));
    } else {
      expanded.push_back(i);
    }
  }
  stack[self_pos + 1] = c10::IValue(expanded);
  return true;
}

}  // namespace vtrn::torch_adapter
