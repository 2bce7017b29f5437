// Installs ATen's CPU softmax kernels into the runtime (runtime/aten_softmax.h), called through
// at::cpu:: on the executor's buffers (their _out forms write the call's result in place):
// below the dispatcher, so no dispatch mode, profiler or autograd graph sees them.
#include "vtrn/torch/aten_softmax.h"

#include <ATen/ops/_log_softmax_backward_data_cpu_dispatch.h>
#include <ATen/ops/_log_softmax_cpu_dispatch.h>
#include <ATen/ops/_softmax_backward_data_cpu_dispatch.h>
#include <ATen/ops/_softmax_cpu_dispatch.h>
#include <ATen/ops/from_blob.h>

#include <array>
#include <cstdint>

#include "vtrn/runtime/aten_softmax.h"
#include "vtrn/torch/aten_thread_budget.h"

namespace vtrn::torch_adapter {
namespace {

void softmax(const runtime::aten_softmax::Call& c) {
  follow_thread_budget(c.threads);
  const std::array<std::int64_t, 2> shape{c.rows, c.n};
  const auto wrap = [&](const float* p) {
    return at::from_blob(const_cast<float*>(p), shape, at::TensorOptions().dtype(at::kFloat));
  };
  at::Tensor out = wrap(c.out);
  if (c.backward && c.log)
    at::cpu::_log_softmax_backward_data_out(out, wrap(c.a), wrap(c.b), 1, at::kFloat);
  else if (c.backward)
    at::cpu::_softmax_backward_data_out(out, wrap(c.a), wrap(c.b), 1, at::kFloat);
  else if (c.log)
    at::cpu::_log_softmax_out(out, wrap(c.a), 1, false);
  else
    at::cpu::_softmax_out(out, wrap(c.a), 1, false);
}

}  // namespace

void install_aten_softmax() { runtime::aten_softmax::install(&softmax); }

}  // namespace vtrn::torch_adapter
