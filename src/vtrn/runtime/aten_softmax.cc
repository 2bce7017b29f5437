#include "vtrn/runtime/aten_softmax.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "vtrn/compiler/aten_softmax.h"

namespace vtrn::runtime::aten_softmax {
namespace {

std::atomic<Kernel> g_kernel{nullptr};

}  // namespace

void install(Kernel kernel) { g_kernel.store(kernel); }
Kernel installed() { return g_kernel.load(); }

void formula(const Call& c) {
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const float* a = c.a + r * c.n;
    float* out = c.out + r * c.n;
    if (c.backward) {
      const float* y = c.b + r * c.n;
      double sum = 0;
      for (std::int64_t j = 0; j < c.n; ++j) sum += c.log ? double{a[j]} : double{a[j]} * y[j];
      for (std::int64_t j = 0; j < c.n; ++j)
        out[j] =
            static_cast<float>(c.log ? a[j] - std::exp(double{y[j]}) * sum : y[j] * (a[j] - sum));
      continue;
    }
    double max = -std::numeric_limits<double>::infinity(), sum = 0;
    for (std::int64_t j = 0; j < c.n; ++j) max = std::max(max, double{a[j]});
    for (std::int64_t j = 0; j < c.n; ++j) sum += std::exp(a[j] - max);
    for (std::int64_t j = 0; j < c.n; ++j)
      out[j] = static_cast<float>(c.log ? a[j] - max - std::log(sum) : std::exp(a[j] - max) / sum);
  }
}

void call(const CustomCallArgs& args) {
  const std::optional<compiler::AtenSoftmaxConfig> config =
      compiler::parse_aten_softmax_config(args.backend_config);
  if (!config)
    throw ExecError("custom_call @" + std::string(compiler::kAtenSoftmaxTarget) +
                    " has a malformed backend_config \"" + args.backend_config + "\"");
  Call c;
  c.log = config->log;
  c.backward = config->backward;
  c.rows = args.output_types[0].dims[0];
  c.n = args.output_types[0].dims[1];
  c.a = static_cast<const float*>(args.inputs[0]);
  if (c.backward) c.b = static_cast<const float*>(args.inputs[1]);
  c.threads = executor_threads();
  c.out = static_cast<float*>(args.outputs[0]);
  const Kernel kernel = installed();
  if (kernel != nullptr && c.rows > 0 && c.n > 0)
    kernel(c);
  else
    formula(c);
}

}  // namespace vtrn::runtime::aten_softmax
