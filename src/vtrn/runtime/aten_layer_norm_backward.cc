#include "vtrn/runtime/aten_layer_norm_backward.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "vtrn/compiler/aten_layer_norm_backward.h"

namespace vtrn::runtime::aten_layer_norm_backward {
namespace {

std::atomic<Kernel> g_kernel{nullptr};

}  // namespace

void install(Kernel kernel) { g_kernel.store(kernel); }

Kernel installed() { return g_kernel.load(); }

void formula(const Call& c) {
  std::vector<double> dgamma(static_cast<std::size_t>(c.n), 0.0), dbeta(dgamma.size(), 0.0);
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const float* dy = c.dy + r * c.n;
    const float* x = c.x + r * c.n;
    const double mean = c.mean[r], rstd = c.rstd[r];
    double sum_g = 0, sum_gx = 0;
    for (std::int64_t j = 0; j < c.n; ++j) {
      const double g = c.gamma != nullptr ? double{dy[j]} * c.gamma[j] : dy[j];
      const double xhat = (x[j] - mean) * rstd;
      sum_g += g;
      sum_gx += g * xhat;
      dgamma[static_cast<std::size_t>(j)] += double{dy[j]} * xhat;
      dbeta[static_cast<std::size_t>(j)] += dy[j];
    }
    const double n = static_cast<double>(c.n);
    for (std::int64_t j = 0; j < c.n; ++j) {
      const double g = c.gamma != nullptr ? double{dy[j]} * c.gamma[j] : dy[j];
      const double xhat = (x[j] - mean) * rstd;
      c.dx[r * c.n + j] = static_cast<float>(rstd * (g - sum_g / n - xhat * sum_gx / n));
    }
  }
  for (std::int64_t j = 0; j < c.n; ++j) {
    if (c.gamma != nullptr) c.dgamma[j] = static_cast<float>(dgamma[static_cast<std::size_t>(j)]);
    if (c.beta) c.dbeta[j] = static_cast<float>(dbeta[static_cast<std::size_t>(j)]);
  }
}

void call(const CustomCallArgs& a) {
  const std::optional<compiler::AtenLayerNormBackwardConfig> config =
      compiler::parse_aten_layer_norm_backward_config(a.backend_config);
  if (!config)
    throw ExecError("custom_call @vtrn.aten_layer_norm_backward has a malformed backend_config \"" +
                    a.backend_config + "\"");
  Call c;
  c.rows = a.input_types[0].dims[0];
  c.n = a.input_types[0].dims[1];
  c.dy = static_cast<const float*>(a.inputs[0]);
  c.x = static_cast<const float*>(a.inputs[1]);
  c.mean = static_cast<const float*>(a.inputs[2]);
  c.rstd = static_cast<const float*>(a.inputs[3]);
  c.gamma = config->gamma ? static_cast<const float*>(a.inputs[4]) : nullptr;
  c.beta = config->beta;
  c.threads = executor_threads();
  c.dx = static_cast<float*>(a.outputs[0]);
  c.dgamma = static_cast<float*>(a.outputs[1]);
  c.dbeta = static_cast<float*>(a.outputs[2]);
  // A gradient the forward had no parameter for is zero.
  if (!config->gamma) std::fill_n(c.dgamma, c.n, 0.0f);
  if (!config->beta) std::fill_n(c.dbeta, c.n, 0.0f);
  const Kernel kernel = installed();
  if (kernel != nullptr && c.rows > 0 && c.n > 0)
    kernel(c);
  else
    formula(c);
}

}  // namespace vtrn::runtime::aten_layer_norm_backward
