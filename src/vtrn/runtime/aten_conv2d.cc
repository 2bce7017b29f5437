#include "vtrn/runtime/aten_conv2d.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vtrn/compiler/aten_conv2d.h"
#include "vtrn/compiler/executable.h"
#include "vtrn/runtime/installed_kernels.h"

namespace vtrn::runtime::aten_conv2d {
namespace {

InstalledKernels<Kernel, BackwardKernel> g_installed;

// The attributes and shapes of a call whose x and w are inputs |x| and |x| + 1 and whose
// convolution's output has |y|'s dims.
Call call_of(const CustomCallArgs& a, const compiler::AtenConv2dConfig& c, std::size_t x,
             const hlo::TensorType& y) {
  Call k;
  k.x = static_cast<const float*>(a.inputs[x]);
  k.weight = static_cast<const float*>(a.inputs[x + 1]);
  for (int i = 0; i < 4; ++i) {
    k.x_dims[i] = a.input_types[x].dims[i];
    k.w_dims[i] = a.input_types[x + 1].dims[i];
    k.y_dims[i] = y.dims[i];
  }
  k.stride = c.stride, k.padding = c.padding, k.dilation = c.dilation;
  k.groups = c.groups;
  k.threads = executor_threads();
  return k;
}

// The module of ops a call stands for, compiled once per config and shapes.
std::shared_ptr<const LoadedExecutable> ops_module(const CustomCallArgs& a,
                                                   const compiler::AtenConv2dConfig& c) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const LoadedExecutable>> cache;
  std::string key = a.backend_config;
  for (const hlo::TensorType& t : a.input_types) key += "|" + t.str();
  const std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[key];
  if (!slot) {
    hlo::Builder b("aten_conv2d");
    const hlo::Value x = b.param(a.input_types[0]), w = b.param(a.input_types[1]);
    std::optional<hlo::Value> bias;
    if (c.bias) bias = b.param(a.input_types[2]);
    slot = std::make_shared<const LoadedExecutable>(
        compiler::compile(b.finish({compiler::aten_conv2d_ops(b, x, w, bias, c)})));
  }
  return slot;
}

}  // namespace

void install(Kernel kernel, BackwardKernel backward) { g_installed.install(kernel, backward); }

Kernel installed() { return g_installed.forward(); }

BackwardKernel installed_backward() { return g_installed.backward(); }

void direct_backward(const BackwardCall& b) {
  const Call& f = b.forward;
  const std::int64_t n = f.x_dims[0], c = f.x_dims[1], h = f.x_dims[2], w = f.x_dims[3];
  const std::int64_t o = f.w_dims[0], cg = f.w_dims[1], kh = f.w_dims[2], kw = f.w_dims[3];
  const std::int64_t og = o / f.groups;
  const std::int64_t oh = f.y_dims[2], ow = f.y_dims[3];
  const float* dy = b.dy;
  std::vector<double> dx(b.grads[0] ? static_cast<std::size_t>(n * c * h * w) : 0);
  std::vector<double> dw(b.grads[1] ? static_cast<std::size_t>(o * cg * kh * kw) : 0);
  std::vector<double> db(b.grads[2] ? static_cast<std::size_t>(o) : 0);
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t io = 0; io < o; ++io)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j) {
          const double g = dy[((in * o + io) * oh + i) * ow + j];
          if (b.grads[2]) db[io] += g;
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t ki = 0; ki < kh; ++ki)
              for (std::int64_t kj = 0; kj < kw; ++kj) {
                const std::int64_t r = i * f.stride[0] - f.padding[0] + ki * f.dilation[0];
                const std::int64_t s = j * f.stride[1] - f.padding[1] + kj * f.dilation[1];
                if (r < 0 || r >= h || s < 0 || s >= w) continue;
                const std::int64_t xi = ((in * c + io / og * cg + ci) * h + r) * w + s;
                const std::int64_t wi = ((io * cg + ci) * kh + ki) * kw + kj;
                if (b.grads[0]) dx[xi] += g * f.weight[wi];
                if (b.grads[1]) dw[wi] += g * f.x[xi];
              }
        }
  for (std::size_t i = 0; i < dx.size(); ++i) b.dx[i] = static_cast<float>(dx[i]);
  for (std::size_t i = 0; i < dw.size(); ++i) b.dw[i] = static_cast<float>(dw[i]);
  for (std::size_t i = 0; i < db.size(); ++i) b.db[i] = static_cast<float>(db[i]);
}

void call(const CustomCallArgs& a) {
  const std::optional<compiler::AtenConv2dConfig> c =
      compiler::parse_aten_conv2d_config(a.backend_config);
  if (!c)
    throw ExecError("custom_call @vtrn.aten_conv2d has a malformed backend_config \"" +
                    a.backend_config + "\"");
  const Kernel kernel = installed();
  if (kernel == nullptr || a.output_types[0].num_elements() == 0 ||
      a.input_types[0].num_elements() == 0) {
    ops_module(a, *c)->run(a.inputs, a.outputs);
    return;
  }
  Call k = call_of(a, *c, 0, a.output_types[0]);
  k.bias = c->bias ? static_cast<const float*>(a.inputs[2]) : nullptr;
  k.y = static_cast<float*>(a.outputs[0]);
  kernel(k);
}

void backward_call(const CustomCallArgs& a) {
  const std::optional<compiler::AtenConv2dBackwardConfig> c =
      compiler::parse_aten_conv2d_backward_config(a.backend_config);
  if (!c)
    throw ExecError("custom_call @vtrn.aten_conv2d_backward has a malformed backend_config \"" +
                    a.backend_config + "\"");
  BackwardCall b;
  b.forward = call_of(a, c->forward, 1, a.input_types[0]);
  b.dy = static_cast<const float*>(a.inputs[0]);
  b.grads = c->grads;
  b.dx = static_cast<float*>(a.outputs[0]);
  b.dw = static_cast<float*>(a.outputs[1]);
  b.db = static_cast<float*>(a.outputs[2]);
  // The gradients not asked for are zeros.
  for (std::size_t i = 0; i < 3; ++i)
    if (!b.grads[i])
      std::fill_n(static_cast<float*>(a.outputs[i]), a.output_types[i].num_elements(), 0.0f);
  const BackwardKernel kernel = installed_backward();
  if (kernel != nullptr && a.input_types[0].num_elements() > 0 &&
      a.input_types[1].num_elements() > 0)
    kernel(b);
  else
    direct_backward(b);
}

}  // namespace vtrn::runtime::aten_conv2d
