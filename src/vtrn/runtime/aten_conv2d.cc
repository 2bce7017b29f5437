#include "vtrn/runtime/aten_conv2d.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vtrn/compiler/aten_conv2d.h"
#include "vtrn/compiler/executable.h"

namespace vtrn::runtime::aten_conv2d {
namespace {

std::atomic<Kernel> g_kernel{nullptr};

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

void install(Kernel kernel) { g_kernel.store(kernel); }

Kernel installed() { return g_kernel.load(); }

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
  Call k;
  k.x = static_cast<const float*>(a.inputs[0]);
  k.weight = static_cast<const float*>(a.inputs[1]);
  k.bias = c->bias ? static_cast<const float*>(a.inputs[2]) : nullptr;
  for (int i = 0; i < 4; ++i) {
    k.x_dims[i] = a.input_types[0].dims[i];
    k.w_dims[i] = a.input_types[1].dims[i];
  }
  k.stride = c->stride, k.padding = c->padding, k.dilation = c->dilation;
  k.groups = c->groups;
  k.threads = executor_threads();
  k.y = static_cast<float*>(a.outputs[0]);
  kernel(k);
}

}  // namespace vtrn::runtime::aten_conv2d
