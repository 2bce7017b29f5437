#include "vtrn/torch/eager/alias_safety.h"

namespace vtrn::torch_adapter::eager {

AliasSafety analyze_aliasing(const compiler::Executable& exe) {
  const compiler::BufferAssignment& b = exe.buffers;
  return AliasSafety{b.arg_last_reader, b.arg_read_elementwise, b.result_writer,
                     b.result_elementwise};
}

}  // namespace vtrn::torch_adapter::eager
