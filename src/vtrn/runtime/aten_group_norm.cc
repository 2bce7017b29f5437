#include "vtrn/runtime/aten_group_norm.h"

#include <cmath>
#include <optional>
#include <string>

#include "vtrn/compiler/aten_group_norm.h"
#include "vtrn/runtime/installed_kernels.h"

namespace vtrn::runtime::aten_group_norm {
namespace {

InstalledKernels<Kernel, BackwardKernel> g_installed;

// N, C, G and the elements per (sample, channel) of a call's x.
struct Layout {
  std::int64_t batch, channels, groups, inner = 1;
  Layout(const std::vector<std::int64_t>& dims, std::int64_t g)
      : batch(dims[0]), channels(dims[1]), groups(g) {
    for (std::size_t i = 2; i < dims.size(); ++i) inner *= dims[i];
  }
  std::int64_t per_group() const { return channels / groups * inner; }
  // The first element of (sample n, group g): a group's elements are contiguous.
  std::int64_t start(std::int64_t n, std::int64_t g) const {
    return (n * channels + g * (channels / groups)) * inner;
  }
  std::int64_t channel(std::int64_t g, std::int64_t j) const {
    return g * (channels / groups) + j / inner;
  }
};

compiler::AtenGroupNormConfig parsed(const CustomCallArgs& a, bool backward) {
  const std::optional<compiler::AtenGroupNormConfig> config =
      compiler::parse_aten_group_norm_config(a.backend_config, backward);
  if (!config)
    throw ExecError("custom_call @" +
                    std::string(backward ? compiler::kAtenGroupNormBackwardTarget
                                         : compiler::kAtenGroupNormTarget) +
                    " has a malformed backend_config \"" + a.backend_config + "\"");
  return *config;
}

}  // namespace

void install(Kernel kernel, BackwardKernel backward) { g_installed.install(kernel, backward); }
Kernel installed() { return g_installed.forward(); }
BackwardKernel installed_backward() { return g_installed.backward(); }

void formula(const Call& c) {
  const Layout l(c.dims, c.groups);
  const std::int64_t m = l.per_group();
  for (std::int64_t n = 0; n < l.batch; ++n)
    for (std::int64_t g = 0; g < l.groups; ++g) {
      const float* x = c.x + l.start(n, g);
      double sum = 0, squares = 0;
      for (std::int64_t j = 0; j < m; ++j) sum += x[j];
      const double mean = sum / static_cast<double>(m);
      for (std::int64_t j = 0; j < m; ++j) squares += (x[j] - mean) * (x[j] - mean);
      const double rstd = 1 / std::sqrt(squares / static_cast<double>(m) + c.eps);
      c.mean[n * l.groups + g] = static_cast<float>(mean);
      c.rstd[n * l.groups + g] = static_cast<float>(rstd);
      for (std::int64_t j = 0; j < m; ++j) {
        const std::int64_t ch = l.channel(g, j);
        const double w = c.weight != nullptr ? c.weight[ch] : 1.0;
        const double b = c.bias != nullptr ? c.bias[ch] : 0.0;
        c.y[l.start(n, g) + j] = static_cast<float>((x[j] - mean) * rstd * w + b);
      }
    }
}

void backward_formula(const BackwardCall& c) {
  const Layout l(c.dims, c.groups);
  const std::int64_t m = l.per_group();
  std::vector<double> dweight(static_cast<std::size_t>(l.channels), 0.0), dbias(dweight);
  for (std::int64_t n = 0; n < l.batch; ++n)
    for (std::int64_t g = 0; g < l.groups; ++g) {
      const std::int64_t s = l.start(n, g);
      const double mean = c.mean[n * l.groups + g], rstd = c.rstd[n * l.groups + g];
      double sum_g = 0, sum_gx = 0;
      for (std::int64_t j = 0; j < m; ++j) {
        const std::int64_t ch = l.channel(g, j);
        const double xhat = (c.x[s + j] - mean) * rstd;
        const double gw = double{c.dy[s + j]} * (c.weight != nullptr ? c.weight[ch] : 1.0);
        sum_g += gw;
        sum_gx += gw * xhat;
        dweight[static_cast<std::size_t>(ch)] += double{c.dy[s + j]} * xhat;
        dbias[static_cast<std::size_t>(ch)] += c.dy[s + j];
      }
      for (std::int64_t j = 0; j < m; ++j) {
        const std::int64_t ch = l.channel(g, j);
        const double xhat = (c.x[s + j] - mean) * rstd;
        const double gw = double{c.dy[s + j]} * (c.weight != nullptr ? c.weight[ch] : 1.0);
        const double md = static_cast<double>(m);
        c.dx[s + j] = static_cast<float>(rstd * (gw - sum_g / md - xhat * sum_gx / md));
      }
    }
  for (std::int64_t ch = 0; ch < l.channels; ++ch) {  // zero without the weight, as ATen's
    c.dweight[ch] =
        c.weight != nullptr ? static_cast<float>(dweight[static_cast<std::size_t>(ch)]) : 0.0f;
    c.dbias[ch] =
        c.weight != nullptr ? static_cast<float>(dbias[static_cast<std::size_t>(ch)]) : 0.0f;
  }
}

void call(const CustomCallArgs& a) {
  const compiler::AtenGroupNormConfig config = parsed(a, /*backward=*/false);
  Call c;
  c.dims = a.input_types[0].dims;
  c.groups = config.groups;
  c.eps = config.eps;
  c.x = static_cast<const float*>(a.inputs[0]);
  std::size_t next = 1;
  if (config.weight) c.weight = static_cast<const float*>(a.inputs[next++]);
  if (config.bias) c.bias = static_cast<const float*>(a.inputs[next++]);
  c.threads = executor_threads();
  c.y = static_cast<float*>(a.outputs[0]);
  c.mean = static_cast<float*>(a.outputs[1]);
  c.rstd = static_cast<float*>(a.outputs[2]);
  const Kernel kernel = installed();
  if (kernel != nullptr && a.output_types[0].num_elements() > 0)
    kernel(c);
  else
    formula(c);
}

void backward_call(const CustomCallArgs& a) {
  const compiler::AtenGroupNormConfig config = parsed(a, /*backward=*/true);
  BackwardCall c;
  c.dims = a.input_types[1].dims;
  c.groups = config.groups;
  c.dy = static_cast<const float*>(a.inputs[0]);
  c.x = static_cast<const float*>(a.inputs[1]);
  c.mean = static_cast<const float*>(a.inputs[2]);
  c.rstd = static_cast<const float*>(a.inputs[3]);
  if (config.weight) c.weight = static_cast<const float*>(a.inputs[4]);
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

}  // namespace vtrn::runtime::aten_group_norm
