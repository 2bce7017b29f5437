#include "vtrn/runtime/aten_gelu.h"

#include <cmath>
#include <string>
#include <string_view>

#include "vtrn/compiler/aten_gelu.h"
#include "vtrn/runtime/installed_kernels.h"

namespace vtrn::runtime::aten_gelu {
namespace {

InstalledKernels<Forward, Backward> g_installed;

// ATen's scalar constants: M_SQRT1_2 and M_2_SQRTPI * M_SQRT1_2 * 0.5, rounded to float; the
// tanh approximation's M_SQRT2 * M_2_SQRTPI * 0.5 and 0.044715.
constexpr float kAlpha = static_cast<float>(0.70710678118654752440);
constexpr float kBeta = static_cast<float>(1.12837916709551257390 * 0.70710678118654752440 * 0.5);
constexpr float kTanhBeta =
    static_cast<float>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);
constexpr float kKappa = 0.044715f;

void check(const CustomCallArgs& a, std::size_t operands, std::string_view target) {
  bool ok = a.inputs.size() == operands && a.outputs.size() == 1;
  for (std::size_t i = 0; ok && i < operands; ++i)
    ok = a.input_types[i] == a.output_types[0] && a.output_types[0].dtype == hlo::DType::kF32;
  if (!ok)
    throw ExecError("custom_call @" + std::string(target) + " needs " + std::to_string(operands) +
                    " float32 operands of its result's shape");
}

void run_forward(const CustomCallArgs& a, Approximation approximation, std::string_view target) {
  check(a, 1, target);
  const std::int64_t n = a.output_types[0].num_elements();
  const auto* x = static_cast<const float*>(a.inputs[0]);
  auto* y = static_cast<float*>(a.outputs[0]);
  if (const Forward f = g_installed.forward()) return f(approximation, n, x, y);
  scalar_forward(approximation, n, x, y);
}

void run_backward(const CustomCallArgs& a, Approximation approximation, std::string_view target) {
  check(a, 2, target);
  const std::int64_t n = a.output_types[0].num_elements();
  const auto* dy = static_cast<const float*>(a.inputs[0]);
  const auto* x = static_cast<const float*>(a.inputs[1]);
  auto* dx = static_cast<float*>(a.outputs[0]);
  if (const Backward f = g_installed.backward()) return f(approximation, n, dy, x, dx);
  scalar_backward(approximation, n, dy, x, dx);
}

}  // namespace

void install(Forward forward, Backward backward) { g_installed.install(forward, backward); }

bool installed() { return g_installed.forward() != nullptr && g_installed.backward() != nullptr; }

void scalar_forward(Approximation a, std::int64_t n, const float* x, float* y) {
  if (a == Approximation::kTanh) {
    for (std::int64_t i = 0; i < n; ++i) {  // ATen's scalar expressions, in its order
      const float x_cube = x[i] * x[i] * x[i];
      const float inner = kTanhBeta * (x[i] + kKappa * x_cube);
      y[i] = 0.5f * x[i] * (1.0f + std::tanh(inner));
    }
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * 0.5f * (1.0f + std::erf(x[i] * kAlpha));
}

void scalar_backward(Approximation a, std::int64_t n, const float* dy, const float* x, float* dx) {
  if (a == Approximation::kTanh) {
    for (std::int64_t i = 0; i < n; ++i) {  // ATen's scalar expressions, in its order
      const float x_sq = x[i] * x[i];
      const float x_cube = x_sq * x[i];
      const float t = std::tanh(kTanhBeta * (x[i] + kKappa * x_cube));
      const float left = 0.5f * x[i];
      const float left_derivative = 0.5f * (1.0f + t);
      const float tanh_derivative = 1.0f - t * t;
      const float inner_derivative = kTanhBeta * (1.0f + 3.0f * kKappa * x_sq);
      dx[i] = dy[i] * (left_derivative + left * tanh_derivative * inner_derivative);
    }
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * (1.0f + std::erf(x[i] * kAlpha));
    const float pdf = kBeta * std::exp(x[i] * x[i] * -0.5f);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}

void forward_call(const CustomCallArgs& a) {
  run_forward(a, Approximation::kNone, compiler::kAtenGeluTarget);
}
void backward_call(const CustomCallArgs& a) {
  run_backward(a, Approximation::kNone, compiler::kAtenGeluBackwardTarget);
}
void tanh_forward_call(const CustomCallArgs& a) {
  run_forward(a, Approximation::kTanh, compiler::kAtenGeluTanhTarget);
}
void tanh_backward_call(const CustomCallArgs& a) {
  run_backward(a, Approximation::kTanh, compiler::kAtenGeluTanhBackwardTarget);
}

}  // namespace vtrn::runtime::aten_gelu
