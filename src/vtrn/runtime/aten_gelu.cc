#include "vtrn/runtime/aten_gelu.h"

#include <atomic>
#include <cmath>
#include <string>

#include "vtrn/compiler/aten_gelu.h"

namespace vtrn::runtime::aten_gelu {
namespace {

std::atomic<Forward> g_forward{nullptr};
std::atomic<Backward> g_backward{nullptr};

// ATen's scalar constants: M_SQRT1_2 and M_2_SQRTPI * M_SQRT1_2 * 0.5, rounded to float.
constexpr float kAlpha = static_cast<float>(0.70710678118654752440);
constexpr float kBeta = static_cast<float>(1.12837916709551257390 * 0.70710678118654752440 * 0.5);

void check(const CustomCallArgs& a, std::size_t operands) {
  bool ok = a.inputs.size() == operands && a.outputs.size() == 1;
  for (std::size_t i = 0; ok && i < operands; ++i)
    ok = a.input_types[i] == a.output_types[0] && a.output_types[0].dtype == hlo::DType::kF32;
  if (!ok)
    throw ExecError(
        "custom_call @" +
        std::string(operands == 1 ? compiler::kAtenGeluTarget : compiler::kAtenGeluBackwardTarget) +
        " needs " + std::to_string(operands) + " float32 operands of its result's shape");
}

}  // namespace

void install(Forward forward, Backward backward) {
  g_forward.store(forward);
  g_backward.store(backward);
}

bool installed() { return g_forward.load() != nullptr && g_backward.load() != nullptr; }

void scalar_forward(std::int64_t n, const float* x, float* y) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * 0.5f * (1.0f + std::erf(x[i] * kAlpha));
}

void scalar_backward(std::int64_t n, const float* dy, const float* x, float* dx) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * (1.0f + std::erf(x[i] * kAlpha));
    const float pdf = kBeta * std::exp(x[i] * x[i] * -0.5f);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}

void forward_call(const CustomCallArgs& a) {
  check(a, 1);
  const std::int64_t n = a.output_types[0].num_elements();
  const auto* x = static_cast<const float*>(a.inputs[0]);
  auto* y = static_cast<float*>(a.outputs[0]);
  if (const Forward f = g_forward.load()) return f(n, x, y);
  scalar_forward(n, x, y);
}

void backward_call(const CustomCallArgs& a) {
  check(a, 2);
  const std::int64_t n = a.output_types[0].num_elements();
  const auto* dy = static_cast<const float*>(a.inputs[0]);
  const auto* x = static_cast<const float*>(a.inputs[1]);
  auto* dx = static_cast<float*>(a.outputs[0]);
  if (const Backward f = g_backward.load()) return f(n, dy, x, dx);
  scalar_backward(n, dy, x, dx);
}

}  // namespace vtrn::runtime::aten_gelu
