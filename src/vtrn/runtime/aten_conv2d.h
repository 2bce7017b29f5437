// The executor's `custom_call @vtrn.aten_conv2d` (compiler/aten_conv2d.h): with the function the
// torch layer installs (ATen's own CPU convolution, at the thread budget, which its choice of
// kernel reads), the CPU's bits; without it (the C++ tests, `vtrn hlo --run`) the convolution
// and bias add the call stands for, run as a module of ops.
#pragma once

#include <array>
#include <cstdint>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::aten_conv2d {

/// One convolution: x [n, c, h, w], weight [o, c / groups, kh, kw], bias [o] or null, y
/// [n, o, oh, ow]; float32, row-major.
struct Call {
  const float *x = nullptr, *weight = nullptr, *bias = nullptr;
  std::array<std::int64_t, 4> x_dims{}, w_dims{}, y_dims{};
  std::array<std::int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  std::int64_t groups = 1;
  int threads = 1;
  float* y = nullptr;
};

using Kernel = void (*)(const Call& call);

/// One backward: dy [n, o, oh, ow] and the forward's x and weight (bias unused) to the gradients
/// |grads| asks for (dx of x's shape, dw of the weight's, db [o]); the others are left alone.
struct BackwardCall {
  Call forward;  ///< its y unset, its y_dims dy's
  const float* dy = nullptr;
  std::array<bool, 3> grads{true, true, true};
  float *dx = nullptr, *dw = nullptr, *db = nullptr;
};

using BackwardKernel = void (*)(const BackwardCall& call);

/// Installs |kernel| and |backward| (nullptr uninstalls). Safe against concurrent calls.
void install(Kernel kernel, BackwardKernel backward = nullptr);
Kernel installed();
BackwardKernel installed_backward();

/// The backward without an installed kernel: the gradients summed directly, in float64.
void direct_backward(const BackwardCall& call);

/// The custom calls' kernels.
void call(const CustomCallArgs& args);
void backward_call(const CustomCallArgs& args);

}  // namespace vtrn::runtime::aten_conv2d
