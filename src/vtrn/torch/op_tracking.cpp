#include "vtrn/torch/op_tracking.h"

#include <algorithm>
#include <mutex>
#include <set>

#include <c10/util/Exception.h>

namespace vtrn::torch_adapter {

namespace detail {
// Starts at 1 so that a call site's zero-initialised cache never matches.
std::atomic<uint64_t> tracking_epoch{1};
}  // namespace detail

namespace {

struct OpSets {
  std::mutex mutex;
  std::set<std::string> executed;
  std::set<std::string> fallback;
};

OpSets& op_sets() {
  // Leaked on purpose: kernels may run during static destruction at interpreter exit.
  static auto* sets = new OpSets();
  return *sets;
}

std::vector<std::string> to_vector(const std::set<std::string>& names) {
  return {names.begin(), names.end()};
}

}  // namespace

void detail::insert_executed(const char* name) {
  auto& sets = op_sets();
  std::lock_guard<std::mutex> lock(sets.mutex);
  sets.executed.emplace(name);
}

void record_fallback(const std::string& name) {
  auto& sets = op_sets();
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(sets.mutex);
    sets.executed.insert(name);
    first = sets.fallback.insert(name).second;
  }
  // Warn outside the lock: TORCH_WARN may reach Python's warning machinery.
  if (first) {
    // Not verbatim, so Python attributes the warning to the user's line.
    TORCH_WARN("[Neuron] [WARNING] Operator '", name,
               "' fell back to CPU. It runs on the host, not on a NeuronCore; "
               "vtrn.get_fallback_ops() lists every op that did.");
  }
}

std::vector<std::string> executed_ops() {
  auto& sets = op_sets();
  std::lock_guard<std::mutex> lock(sets.mutex);
  return to_vector(sets.executed);
}

std::vector<std::string> fallback_ops() {
  auto& sets = op_sets();
  std::lock_guard<std::mutex> lock(sets.mutex);
  return to_vector(sets.fallback);
}

void clear_op_tracking() {
  auto& sets = op_sets();
  std::lock_guard<std::mutex> lock(sets.mutex);
  sets.executed.clear();
  sets.fallback.clear();
  detail::tracking_epoch.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace vtrn::torch_adapter
