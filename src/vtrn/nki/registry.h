// Traced kernels that compiled modules call: `stablehlo.custom_call @vtrn.nki` names a kernel
// by the content hash of its program, and the runtime finds the program here and runs it with
// the interpreter.
//
// The registry is process-wide and only grows (a kernel's entry is immutable). Keys are chosen
// by the front end (the SHA-256 of fingerprint() and the operand layout), so a module's text,
// and with it the compile cache key, changes whenever the kernel's instructions do; a module
// read from the disk cache in another process finds its kernel because the front end traces
// and registers the kernel before it lowers the call that names it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vtrn/cost/kernel_cost.h"
#include "vtrn/nki/program.h"

namespace vtrn::nki {

/// The target name of the custom call.
inline constexpr std::string_view kCustomCallTarget = "vtrn.nki";

/// A registered kernel and how a call's buffers bind to it. The call's operands are the
/// external tensors |inputs| in order; its results are |results| (the kernel's shared_hbm
/// results) followed by the new values of the inputs at positions |mutated| (the call is
/// functional: a result starts as a copy of its input and the kernel writes it).
struct RegisteredKernel {
  Program program;
  std::vector<std::int32_t> inputs;
  std::vector<std::int32_t> results;
  std::vector<std::size_t> mutated;
  double latency_s = 0;                      ///< the schedule's modeled latency
  cost::Engine engine = cost::Engine::kDma;  ///< its busiest engine
};

/// Canonical bytes of everything that decides what |program| computes and how long it takes
/// (target, tensors, instructions and their parameters); names and source lines are left out.
std::string fingerprint(const Program& program);

/// Adds |kernel| under |key| (schedules it for its latency). A key registered before keeps
/// its entry. Throws std::invalid_argument for a binding that names no external tensor.
std::shared_ptr<const RegisteredKernel> register_kernel(const std::string& key,
                                                        RegisteredKernel kernel);
/// The kernel registered under |key|, or nullptr.
std::shared_ptr<const RegisteredKernel> find_kernel(const std::string& key);

/// backend_config of the custom call: "kernel=<key>;latency_s=<seconds>;engine=<name>".
std::string backend_config(const std::string& key, const RegisteredKernel& kernel);
struct CallConfig {
  std::string kernel;
  double latency_s = 0;
  cost::Engine engine = cost::Engine::kDma;
};
/// Parses backend_config(); nullopt when |config| is not one.
std::optional<CallConfig> parse_backend_config(std::string_view config);

/// Runs |kernel| on the call's buffers: |inputs| (one per operand, read only) and |outputs|
/// (one per result, written). Byte counts are checked against the program's tensors.
void run_kernel(const RegisteredKernel& kernel, const std::vector<const void*>& inputs,
                const std::vector<std::size_t>& input_bytes, const std::vector<void*>& outputs,
                const std::vector<std::size_t>& output_bytes);

}  // namespace vtrn::nki
