#include "vtrn/runtime/kernels_norm.h"

#include <algorithm>
#include <optional>
#include <string>

#include "vtrn/compiler/aten_layer_norm.h"
#include "vtrn/compiler/aten_norm.h"
#include "vtrn/hlo/dtype.h"
#include "vtrn/runtime/aten_layer_norm.h"
#include "vtrn/runtime/aten_norm.h"
#include "vtrn/runtime/thread_pool.h"

namespace vtrn::runtime::kernels {
namespace {

// Fewer elements than this run in the caller: waking a worker costs more.
constexpr std::int64_t kParallelMin = 1 << 16;

// run(lo, hi) over |rows| rows of |n| elements: in the caller for small work, else split.
template <typename Fn>
void over_rows(std::int64_t rows, std::int64_t n, const Fn& run) {
  const int threads = executor_threads();
  if (threads <= 1 || rows < 2 || rows * n < kParallelMin) return run(0, rows);
  parallel_ranges(rows, std::max<std::int64_t>(1, kParallelMin / 4 / std::max<std::int64_t>(n, 1)),
                  threads, run);
}

template <typename T>
float row_norm(const compiler::AtenNormConfig& c, const T* x, std::int64_t n) {
  return c.vectorized ? aten_norm::norm2_vectorized(x, n) : aten_norm::norm_in_order(x, n, c.ord);
}

}  // namespace

void aten_norm(const CustomCallArgs& args) {
  const std::string what = "custom_call @" + std::string(compiler::kAtenNormTarget);
  const std::optional<compiler::AtenNormConfig> c =
      compiler::parse_aten_norm_config(args.backend_config);
  if (!c) throw ExecError(what + " has a malformed backend_config \"" + args.backend_config + "\"");
  if (args.inputs.size() != 1 || args.outputs.size() != 1 || args.input_types[0].rank() != 2)
    throw ExecError(what + " got " + std::to_string(args.inputs.size()) + " operands and " +
                    std::to_string(args.outputs.size()) + " results");
  const hlo::TensorType& t = args.input_types[0];
  const std::int64_t rows = t.dims[0], n = t.dims[1];
  const bool bf16 = t.dtype == hlo::DType::kBF16;
  auto run = [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      if (bf16) {
        const auto* x = static_cast<const std::uint16_t*>(args.inputs[0]) + r * n;
        static_cast<std::uint16_t*>(args.outputs[0])[r] = hlo::f32_to_bf16(row_norm(*c, x, n));
      } else {
        const auto* x = static_cast<const float*>(args.inputs[0]) + r * n;
        static_cast<float*>(args.outputs[0])[r] = row_norm(*c, x, n);
      }
    }
  };
  over_rows(rows, n, run);
}

void aten_layer_norm(const CustomCallArgs& args) {
  const std::string what = "custom_call @" + std::string(compiler::kAtenLayerNormTarget);
  const std::optional<compiler::AtenLayerNormConfig> c =
      compiler::parse_aten_layer_norm_config(args.backend_config);
  if (!c) throw ExecError(what + " has a malformed backend_config \"" + args.backend_config + "\"");
  const std::size_t operands = 1 + (c->gamma ? 1 : 0) + (c->beta ? 1 : 0);
  if (args.inputs.size() != operands || args.outputs.size() != 3 || args.input_types[0].rank() != 2)
    throw ExecError(what + " got " + std::to_string(args.inputs.size()) + " operands and " +
                    std::to_string(args.outputs.size()) + " results");
  const std::int64_t rows = args.input_types[0].dims[0], n = args.input_types[0].dims[1];
  const auto* x = static_cast<const float*>(args.inputs[0]);
  const auto* gamma = c->gamma ? static_cast<const float*>(args.inputs[1]) : nullptr;
  const auto* beta = c->beta ? static_cast<const float*>(args.inputs[c->gamma ? 2 : 1]) : nullptr;
  auto* y = static_cast<float*>(args.outputs[0]);
  auto* mean = static_cast<float*>(args.outputs[1]);
  auto* rstd = static_cast<float*>(args.outputs[2]);
  over_rows(rows, n, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r)
      aten_layer_norm::layer_norm_row(x + r * n, n, gamma, beta, c->eps, y + r * n, mean + r,
                                      rstd + r);
  });
}

}  // namespace vtrn::runtime::kernels
