// Runs a Program on real values on the CPU.
//
// Each instruction works on whole tiles: its operands are read into contiguous double buffers
// (decoding the stored dtype), computed with tight loops (OpenBLAS sgemm for matmul), and
// written back through the destination's access pattern, rounding to its dtype. On-chip and
// scratch tensors are allocated at their first use, filled with the simulator's sentinels
// (NaN / 4), and freed after their last use; external tensors live in caller memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "vtrn/nki/program.h"

namespace vtrn::nki {

class Interpreter {
 public:
  explicit Interpreter(const Program& program);

  /// Binds external tensor |tensor| to |bytes| bytes at |data| (which must be
  /// elements * dtype size). |fill| writes the sentinel first (a kernel result that the
  /// kernel may leave partly unwritten).
  void bind(std::int32_t tensor, void* data, std::size_t bytes, bool fill);
  /// Executes every instruction in program order. Throws std::invalid_argument when an
  /// external tensor is unbound.
  void run();

 private:
  struct Storage {
    std::vector<unsigned char> owned;
    unsigned char* data = nullptr;
    std::vector<unsigned char> written;  ///< PSUM only: element has been written
  };
  unsigned char* ensure(std::int32_t tensor);
  void read(const Access& access, std::vector<double>& out, const std::vector<std::uint8_t>* mask);
  void write(const Access& access, const std::vector<double>& values,
             const std::vector<std::uint8_t>* mask);
  void execute(const Instruction& inst);
  void matmul(const Instruction& inst);

  const Program& program_;
  std::vector<Storage> storage_;
  std::vector<std::vector<std::int32_t>> frees_;  ///< per instruction: tensors last used there
  std::vector<double> a_, b_, c_, d_, e_;         ///< scratch operand buffers
};

}  // namespace vtrn::nki
