#include "vtrn/compiler/ops_cost.h"

#include <map>

#include "vtrn/compiler/executable.h"

namespace vtrn::compiler {

cost::KernelCost cost_as_ops(const hlo::Module& module, const cost::CostModel& model) {
  const Executable exe = compile(module, CompileOptions{}, model);
  cost::KernelCost sum;
  std::map<cost::Engine, double> bound;  // time of the kernels each engine bounds
  for (const Kernel& kernel : exe.kernels) {
    const cost::KernelCost& kc = kernel.cost;
    sum.flops += kc.flops;
    sum.tensor_s += kc.tensor_s;
    sum.vector_s += kc.vector_s;
    sum.scalar_s += kc.scalar_s;
    sum.dma_s += kc.dma_s;
    sum.fixed_s += kc.fixed_s;
    sum.time_s += kc.time_s;
    if (kc.time_s > 0) bound[kc.engine] += kc.time_s;
  }
  double most = -1;
  for (const auto& [engine, t] : bound)
    if (t > most) most = t, sum.engine = engine;
  return sum;
}

}  // namespace vtrn::compiler
