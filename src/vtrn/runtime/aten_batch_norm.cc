#include "vtrn/runtime/aten_batch_norm.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "vtrn/compiler/aten_batch_norm.h"
#include "vtrn/runtime/installed_kernels.h"

namespace vtrn::runtime::aten_batch_norm {
namespace {

InstalledKernels<Kernel, BackwardKernel> g_installed;

// N, C and the elements per (sample, channel) of |dims|.
struct Layout {
  std::int64_t batch = 0, channels = 0, inner = 1;
  explicit Layout(const std::vector<std::int64_t>& dims) : batch(dims[0]), channels(dims[1]) {
    for (std::size_t i = 2; i < dims.size(); ++i) inner *= dims[i];
  }
  // Calls f(index) for every element of channel |c|.
  template <typename F>
  void each(std::int64_t c, F f) const {
    for (std::int64_t n = 0; n < batch; ++n)
      for (std::int64_t i = 0; i < inner; ++i) f((n * channels + c) * inner + i);
  }
};

compiler::AtenBatchNormConfig parsed(const CustomCallArgs& a, bool backward) {
  const std::optional<compiler::AtenBatchNormConfig> config =
      compiler::parse_aten_batch_norm_config(a.backend_config, backward);
  if (!config)
    throw ExecError("custom_call @" +
                    std::string(backward ? compiler::kAtenBatchNormBackwardTarget
                                         : compiler::kAtenBatchNormTarget) +
                    " has a malformed backend_config \"" + a.backend_config + "\"");
  return *config;
}

const float* vector_operand(const CustomCallArgs& a, std::size_t& next, bool present) {
  return present ? static_cast<const float*>(a.inputs[next++]) : nullptr;
}

}  // namespace

void install(Kernel kernel, BackwardKernel backward) { g_installed.install(kernel, backward); }

Kernel installed() { return g_installed.forward(); }
BackwardKernel installed_backward() { return g_installed.backward(); }

void formula(const Call& c) {
  const Layout l(c.dims);
  const double n = static_cast<double>(l.batch * l.inner);
  for (std::int64_t ch = 0; ch < l.channels; ++ch) {
    double mean = 0, invstd = 0;
    if (c.training) {
      double sum = 0, squares = 0;
      l.each(ch, [&](std::int64_t i) { sum += c.x[i]; });
      mean = sum / n;
      l.each(ch, [&](std::int64_t i) { squares += (c.x[i] - mean) * (c.x[i] - mean); });
      const double var = squares / n;
      invstd = 1 / std::sqrt(var + c.eps);
      if (c.running_mean != nullptr) {
        c.running_mean[ch] =
            static_cast<float>((1 - c.momentum) * c.running_mean[ch] + c.momentum * mean);
        const double unbiased = n > 1 ? var * n / (n - 1) : var;
        c.running_var[ch] =
            static_cast<float>((1 - c.momentum) * c.running_var[ch] + c.momentum * unbiased);
      }
    } else {
      mean = c.running_mean[ch];
      invstd = 1 / std::sqrt(c.running_var[ch] + c.eps);
    }
    c.mean[ch] = static_cast<float>(mean);
    c.invstd[ch] = static_cast<float>(invstd);
    const double w = c.weight != nullptr ? c.weight[ch] : 1.0;
    const double b = c.bias != nullptr ? c.bias[ch] : 0.0;
    l.each(ch,
           [&](std::int64_t i) { c.y[i] = static_cast<float>((c.x[i] - mean) * invstd * w + b); });
  }
}

void backward_formula(const BackwardCall& c) {
  const Layout l(c.dims);
  const double n = static_cast<double>(l.batch * l.inner);
  for (std::int64_t ch = 0; ch < l.channels; ++ch) {
    const double mean = c.a[ch];
    const double invstd = c.training ? c.b[ch] : 1 / std::sqrt(c.b[ch] + c.eps);
    const double w = c.weight != nullptr ? c.weight[ch] : 1.0;
    double sum_dy = 0, sum_dy_xhat = 0;
    l.each(ch, [&](std::int64_t i) {
      sum_dy += c.dy[i];
      sum_dy_xhat += c.dy[i] * (c.x[i] - mean) * invstd;
    });
    c.dweight[ch] = static_cast<float>(sum_dy_xhat);
    c.dbias[ch] = static_cast<float>(sum_dy);
    l.each(ch, [&](std::int64_t i) {
      const double xhat = (c.x[i] - mean) * invstd;
      const double g = c.training ? c.dy[i] - sum_dy / n - xhat * sum_dy_xhat / n : double{c.dy[i]};
      c.dx[i] = static_cast<float>(g * invstd * w);
    });
  }
}

void call(const CustomCallArgs& a) {
  const compiler::AtenBatchNormConfig config = parsed(a, /*backward=*/false);
  Call c;
  c.dims = a.input_types[0].dims;
  c.x = static_cast<const float*>(a.inputs[0]);
  std::size_t next = 1;
  c.weight = vector_operand(a, next, config.weight);
  c.bias = vector_operand(a, next, config.bias);
  const float* running_mean = vector_operand(a, next, config.running);
  const float* running_var = vector_operand(a, next, config.running);
  c.training = config.training;
  c.momentum = config.momentum;
  c.eps = config.eps;
  c.threads = executor_threads();
  c.y = static_cast<float*>(a.outputs[0]);
  c.mean = static_cast<float*>(a.outputs[1]);
  c.invstd = static_cast<float*>(a.outputs[2]);
  const std::int64_t channels = c.dims[1];
  if (config.running) {  // the new running statistics start as the old, updated in place
    c.running_mean = static_cast<float*>(a.outputs[3]);
    c.running_var = static_cast<float*>(a.outputs[4]);
    std::copy_n(running_mean, channels, c.running_mean);
    std::copy_n(running_var, channels, c.running_var);
  }
  const Kernel kernel = installed();
  if (kernel != nullptr && a.output_types[0].num_elements() > 0)
    kernel(c);
  else
    formula(c);
}

void backward_call(const CustomCallArgs& a) {
  const compiler::AtenBatchNormConfig config = parsed(a, /*backward=*/true);
  BackwardCall c;
  c.dims = a.input_types[0].dims;
  c.dy = static_cast<const float*>(a.inputs[0]);
  c.x = static_cast<const float*>(a.inputs[1]);
  std::size_t next = 2;
  c.weight = vector_operand(a, next, config.weight);
  c.a = vector_operand(a, next, true);
  c.b = vector_operand(a, next, true);
  c.training = config.training;
  c.eps = config.eps;
  c.threads = executor_threads();
  c.dx = static_cast<float*>(a.outputs[0]);
  c.dweight = static_cast<float*>(a.outputs[1]);
  c.dbias = static_cast<float*>(a.outputs[2]);
  const BackwardKernel kernel = installed_backward();
  if (kernel != nullptr && a.output_types[0].num_elements() > 0)
    kernel(c);
  else
    backward_formula(c);
}

}  // namespace vtrn::runtime::aten_batch_norm
