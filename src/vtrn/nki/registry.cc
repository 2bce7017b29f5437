#include "vtrn/nki/registry.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "vtrn/nki/interpreter.h"
#include "vtrn/nki/schedule.h"

namespace vtrn::nki {

namespace {

// Appends fixed-size values and length-prefixed sequences, so distinct programs never
// serialize to the same bytes.
struct Writer {
  std::string out;
  template <typename T>
  void pod(T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  void text(std::string_view s) {
    pod<std::uint64_t>(s.size());
    out.append(s);
  }
  template <typename T>
  void pods(const std::vector<T>& v) {
    pod<std::uint64_t>(v.size());
    for (const T& x : v) pod(x);
  }
  void access(const Access& a) {
    pod(a.tensor);
    pod(a.offset);
    pod<std::uint64_t>(a.dims.size());
    for (const Dim& d : a.dims) {
      pod(d.stride);
      pod(d.count);
    }
  }
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, std::shared_ptr<const RegisteredKernel>>& kernels() {
  static auto* k = new std::map<std::string, std::shared_ptr<const RegisteredKernel>>();
  return *k;
}

std::size_t tensor_bytes(const Program& p, std::int32_t tensor) {
  const TensorDecl& d = p.tensors().at(static_cast<std::size_t>(tensor));
  return static_cast<std::size_t>(d.elements()) * dtype_size(d.dtype);
}

}  // namespace

std::string fingerprint(const Program& program) {
  Writer w;
  w.text(program.arch().target);
  w.pod<std::uint64_t>(program.tensors().size());
  for (const TensorDecl& t : program.tensors()) {
    w.pod(t.memory);
    w.pod(t.dtype);
    w.pods(t.shape);
    w.pod(t.external);
  }
  w.pod<std::uint64_t>(program.instructions().size());
  for (const Instruction& i : program.instructions()) {
    w.pod(i.op);
    w.text(i.api);
    w.pod(i.engines);
    w.access(i.dst);
    w.pod<std::uint64_t>(i.srcs.size());
    for (const Access& a : i.srcs) w.access(a);
    w.pod(i.alu0);
    w.pod(i.alu1);
    w.pod(i.reduce_op);
    w.pod(i.reverse0);
    w.pod(i.reverse1);
    w.pod(i.negate);
    w.pod(i.imm0);
    w.pod(i.imm1);
    w.pod(i.operand0);
    w.pod(i.operand1);
    w.pod(i.func);
    w.pod(i.bias);
    w.pod(i.scale);
    w.pod(i.has_reduce);
    w.access(i.reduce_dst);
    w.pods(i.axes);
    w.pod(i.accumulate);
    w.pods(i.pattern);
    w.pods(i.mask);
  }
  return w.out;
}

std::shared_ptr<const RegisteredKernel> register_kernel(const std::string& key,
                                                        RegisteredKernel kernel) {
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = kernels().find(key);
    if (it != kernels().end()) return it->second;
  }
  const auto count = static_cast<std::int32_t>(kernel.program.tensors().size());
  auto check = [&](std::int32_t t) {
    if (t < 0 || t >= count || !kernel.program.tensors()[static_cast<std::size_t>(t)].external)
      throw std::invalid_argument("NKI kernel " + key + ": tensor " + std::to_string(t) +
                                  " is not an external tensor of the program");
  };
  for (std::int32_t t : kernel.inputs) check(t);
  for (std::int32_t t : kernel.results) check(t);
  for (std::size_t m : kernel.mutated)
    if (m >= kernel.inputs.size())
      throw std::invalid_argument("NKI kernel " + key + ": mutated input " + std::to_string(m) +
                                  " is not an operand");
  const Schedule s = schedule(kernel.program,
                              cost::InstructionCostModel::for_target(kernel.program.arch().target));
  kernel.latency_s = s.latency_s;
  std::size_t busiest = 0;
  for (std::size_t e = 1; e < s.busy_s.size(); ++e)
    if (s.busy_s[e] > s.busy_s[busiest]) busiest = e;
  kernel.engine = static_cast<cost::Engine>(busiest);
  auto entry = std::make_shared<const RegisteredKernel>(std::move(kernel));
  std::lock_guard<std::mutex> lock(registry_mutex());
  return kernels().emplace(key, std::move(entry)).first->second;
}

std::shared_ptr<const RegisteredKernel> find_kernel(const std::string& key) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = kernels().find(key);
  return it == kernels().end() ? nullptr : it->second;
}

std::string backend_config(const std::string& key, const RegisteredKernel& kernel) {
  char latency[40];
  std::snprintf(latency, sizeof(latency), "%.17g", kernel.latency_s);
  return "kernel=" + key + ";latency_s=" + latency +
         ";engine=" + std::string(cost::engine_name(kernel.engine));
}

std::optional<CallConfig> parse_backend_config(std::string_view config) {
  CallConfig c;
  bool kernel = false, latency = false, engine = false;
  while (!config.empty()) {
    const std::size_t end = std::min(config.find(';'), config.size());
    const std::string_view field = config.substr(0, end);
    config.remove_prefix(end == config.size() ? end : end + 1);
    const std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view name = field.substr(0, eq), value = field.substr(eq + 1);
    if (name == "kernel") {
      c.kernel = std::string(value);
      kernel = !value.empty();
    } else if (name == "latency_s") {
      const std::string v(value);
      char* stop = nullptr;
      c.latency_s = std::strtod(v.c_str(), &stop);
      latency = stop != v.c_str() && *stop == '\0' && c.latency_s >= 0;
    } else if (name == "engine") {
      for (cost::Engine e : {cost::Engine::kTensor, cost::Engine::kVector, cost::Engine::kScalar,
                             cost::Engine::kDma, cost::Engine::kGpSimd})
        if (cost::engine_name(e) == value) {
          c.engine = e;
          engine = true;
        }
    } else {
      return std::nullopt;
    }
  }
  if (!(kernel && latency && engine)) return std::nullopt;
  return c;
}

void run_kernel(const RegisteredKernel& kernel, const std::vector<const void*>& inputs,
                const std::vector<std::size_t>& input_bytes, const std::vector<void*>& outputs,
                const std::vector<std::size_t>& output_bytes) {
  const Program& p = kernel.program;
  if (inputs.size() != kernel.inputs.size() || input_bytes.size() != inputs.size() ||
      outputs.size() != kernel.results.size() + kernel.mutated.size() ||
      output_bytes.size() != outputs.size())
    throw std::invalid_argument("NKI kernel call with " + std::to_string(inputs.size()) +
                                " operands and " + std::to_string(outputs.size()) +
                                " results; the kernel takes " +
                                std::to_string(kernel.inputs.size()) + " and returns " +
                                std::to_string(kernel.results.size() + kernel.mutated.size()));
  auto expect = [&](std::int32_t tensor, std::size_t bytes, const char* what, std::size_t i) {
    if (tensor_bytes(p, tensor) != bytes)
      throw std::invalid_argument("NKI kernel call: " + std::string(what) + " " +
                                  std::to_string(i) + " has " + std::to_string(bytes) +
                                  " bytes, the kernel's tensor has " +
                                  std::to_string(tensor_bytes(p, tensor)));
  };
  Interpreter interp(p);
  std::vector<bool> rebound(inputs.size(), false);
  for (std::size_t j = 0; j < kernel.mutated.size(); ++j) {
    const std::size_t i = kernel.mutated[j];
    const std::size_t o = kernel.results.size() + j;
    expect(kernel.inputs[i], input_bytes[i], "operand", i);
    expect(kernel.inputs[i], output_bytes[o], "result", o);
    if (outputs[o] != inputs[i]) std::memcpy(outputs[o], inputs[i], input_bytes[i]);
    interp.bind(kernel.inputs[i], outputs[o], output_bytes[o], false);
    rebound[i] = true;
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (rebound[i]) continue;
    expect(kernel.inputs[i], input_bytes[i], "operand", i);
    // The interpreter never writes an input the kernel does not mutate.
    interp.bind(kernel.inputs[i], const_cast<void*>(inputs[i]), input_bytes[i], false);
  }
  for (std::size_t j = 0; j < kernel.results.size(); ++j) {
    expect(kernel.results[j], output_bytes[j], "result", j);
    interp.bind(kernel.results[j], outputs[j], output_bytes[j], true);
  }
  interp.run();
}

}  // namespace vtrn::nki
