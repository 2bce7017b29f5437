// What the rest of the adapter needs from the profiler integration.
#pragma once

#include <cstdint>

namespace vtrn::torch_adapter {

/// The correlation id of the innermost op the profiler is recording on this thread (0 when
/// none): device work issued now is linked to that op in the trace.
std::uint64_t profiler_correlation();

/// Kineto's correlation calls: the op |id| starts (pushed) or ends (popped) on this thread.
void push_profiler_correlation(std::uint64_t id);
void pop_profiler_correlation();

}  // namespace vtrn::torch_adapter
