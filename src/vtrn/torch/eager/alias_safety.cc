#include "vtrn/torch/eager/alias_safety.h"

namespace vtrn::torch_adapter::eager {

AliasSafety analyze_aliasing(const compiler::Executable& exe) {
  const hlo::Block& main = exe.module.main;
  AliasSafety a;
  a.param_last_reader.assign(main.args.size(), -1);
  std::vector<int> param_of(main.types.size(), -1);   // value -> the parameter it is (or bitcasts)
  std::vector<int> kernel_of(main.types.size(), -1);  // value -> the kernel computing it
  std::vector<bool> elementwise_of(main.types.size(), false);
  for (size_t p = 0; p < main.args.size(); ++p)
    param_of[static_cast<size_t>(main.args[p])] = static_cast<int>(p);
  for (size_t k = 0; k < exe.kernels.size(); ++k) {
    const compiler::Kernel& kernel = exe.kernels[k];
    const bool bitcast = kernel.kind == compiler::KernelKind::kBitcast;
    bool elementwise = kernel.kind == compiler::KernelKind::kFused;
    for (int oi : kernel.ops)
      elementwise = elementwise &&
                    main.ops.at(static_cast<size_t>(oi)).kind != hlo::OpKind::kReduce &&
                    main.ops.at(static_cast<size_t>(oi)).kind != hlo::OpKind::kDotGeneral;
    for (int oi : kernel.ops) {
      const hlo::Op& op = main.ops.at(static_cast<size_t>(oi));
      for (int v : op.operands) {
        const int p = param_of[static_cast<size_t>(v)];
        if (p >= 0 && !bitcast) a.param_last_reader[static_cast<size_t>(p)] = static_cast<int>(k);
      }
      for (int r : op.results) {
        if (bitcast && !op.operands.empty())
          param_of[static_cast<size_t>(r)] = param_of[static_cast<size_t>(op.operands[0])];
        kernel_of[static_cast<size_t>(r)] = bitcast ? -1 : static_cast<int>(k);
        elementwise_of[static_cast<size_t>(r)] = elementwise;
      }
    }
  }
  for (int r : main.results) {
    a.result_writer.push_back(kernel_of[static_cast<size_t>(r)]);
    a.writer_elementwise.push_back(elementwise_of[static_cast<size_t>(r)]);
  }
  return a;
}

}  // namespace vtrn::torch_adapter::eager
