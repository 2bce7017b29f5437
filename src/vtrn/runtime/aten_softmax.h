// The executor's `custom_call @vtrn.aten_softmax` (compiler/aten_softmax.h): with the
// function the torch layer installs (ATen's own CPU kernels, at the thread count
// torch.set_num_threads gave), the CPU's bits; without it (the C++ tests, `vtrn hlo --run`)
// the formulas with float64 sums, which agree within rounding.
#pragma once

#include <cstdint>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime::aten_softmax {

/// One call over |rows| rows of |n| float32 values, row-major: the forward reads |a| (x), the
/// backward |a| (grad_output) and |b| (the forward's output).
struct Call {
  bool log = false, backward = false;
  std::int64_t rows = 0, n = 0;
  const float *a = nullptr, *b = nullptr;
  int threads = 1;
  float* out = nullptr;
};

using Kernel = void (*)(const Call& call);

/// Installs |kernel| (nullptr uninstalls). Safe against concurrent calls.
void install(Kernel kernel);
Kernel installed();

/// The fallback per row: softmax exp(x - max) / sum, log_softmax x - max - log(sum); the
/// backward of softmax y (g - sum(g y)), of log_softmax g - exp(y) sum(g).
void formula(const Call& call);

/// The custom call's kernel.
void call(const CustomCallArgs& args);

}  // namespace vtrn::runtime::aten_softmax
