// mse_loss and smooth_l1_loss on `neuron`, composed from device ops with the CPU kernels'
// formulas. Without a kernel of their own, their functional forms reached the device through
// their out= forms, whose CPU fallback warned on every call that it resized a 0-dim out ("An
// output with one or more elements was resized"), which the CPU's functional forms never do.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/TensorOperators.h>
#include <ATen/core/Reduction.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/where.h>
#include <torch/library.h>

#include "vtrn/torch/op_tracking.h"

namespace vtrn::torch_adapter {
namespace {

// ATen's apply_loss_reduction.
at::Tensor reduce(const at::Tensor& loss, int64_t reduction) {
  if (reduction == at::Reduction::Mean) return loss.mean();
  if (reduction == at::Reduction::Sum) return loss.sum();
  return loss;
}

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  VTRN_RECORD_OP("mse_loss");
  const at::Tensor diff = self - target;
  return reduce(diff * diff, reduction);
}

// |d| < beta: 0.5 d^2 / beta; else |d| - 0.5 beta. beta == 0 is the L1 loss.
at::Tensor smooth_l1_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                          double beta) {
  VTRN_RECORD_OP("smooth_l1_loss");
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.")
  const at::Tensor z = (self - target).abs();
  if (beta == 0) return reduce(z, reduction);
  return reduce(at::where(z < beta, z * z * 0.5 / beta, z - 0.5 * beta), reduction);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mse_loss", mse_loss);
  m.impl("smooth_l1_loss", smooth_l1_loss);
}

}  // namespace
}  // namespace vtrn::torch_adapter
