// Installs ATen's own CPU GELU kernels into the runtime (runtime/aten_gelu.h): the executor's
// `custom_call @vtrn.aten_gelu` then runs exactly what torch.nn.functional.gelu runs on a
// contiguous CPU tensor (oneDNN's gelu_erf in torch's build; ATen's vector loop for the tanh
// approximation), so it gives the CPU's bits.
// at::cpu:: calls the CPU kernel directly, without the dispatcher: no dispatch mode or
// profiler sees these calls, and no autograd graph records them.
#include "vtrn/torch/aten_gelu.h"

#include <ATen/ops/from_blob.h>
#include <ATen/ops/gelu_backward_cpu_dispatch.h>
#include <ATen/ops/gelu_cpu_dispatch.h>

#include "vtrn/runtime/aten_gelu.h"
#include "vtrn/runtime/executor.h"
#include "vtrn/torch/aten_thread_budget.h"

namespace vtrn::torch_adapter {
namespace {

at::Tensor wrap(const float* p, std::int64_t n) {
  return at::from_blob(const_cast<float*>(p), {n}, at::TensorOptions().dtype(at::kFloat));
}

const char* approximate(runtime::aten_gelu::Approximation a) {
  return a == runtime::aten_gelu::Approximation::kTanh ? "tanh" : "none";
}

void forward(runtime::aten_gelu::Approximation a, std::int64_t n, const float* x, float* y) {
  follow_thread_budget(runtime::executor_threads());  // the tanh loop's chunks end in scalar tails
  at::Tensor out = wrap(y, n);
  at::cpu::gelu_out(out, wrap(x, n), approximate(a));
}

void backward(runtime::aten_gelu::Approximation a, std::int64_t n, const float* dy, const float* x,
              float* dx) {
  follow_thread_budget(runtime::executor_threads());
  at::Tensor out = wrap(dx, n);
  at::cpu::gelu_backward_out(out, wrap(dy, n), wrap(x, n), approximate(a));
}

}  // namespace

void install_aten_gelu() { runtime::aten_gelu::install(&forward, &backward); }

}  // namespace vtrn::torch_adapter
