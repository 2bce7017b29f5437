// Whether an executable may write a result over a parameter it aliases (in-place ops), read
// from the compiler's buffer assignment (compiler/buffer_assignment.h).
//
// Promises: can_alias(r, p) is true only when the kernel computing result r writes it straight
// into its output buffer, no later kernel reads parameter p (nor is p returned), and the
// computing kernel reads p, if at all, only as an elementwise loop does (element i before
// writing element i). Anything else is written through a staging buffer by the launch; the
// executor stages any other output that overlaps an input as well.
#pragma once

#include <cstddef>
#include <vector>

#include "vtrn/compiler/executable.h"

namespace vtrn::torch_adapter::eager {

/// When an output may be written over an input it aliases (in-place ops).
struct AliasSafety {
  std::vector<int> param_last_reader;        // per parameter: the last kernel reading it, or -1
  std::vector<bool> param_read_elementwise;  // per parameter: that kernel reads it elementwise
  std::vector<int> result_writer;            // per result: the kernel computing it, or -1
  std::vector<bool> writer_elementwise;      // per result: that kernel is an elementwise loop

  bool can_alias(size_t result, size_t param) const {
    const int w = result_writer.at(result);
    const int last = param_last_reader.at(param);
    if (w < 0) return false;
    return last < w ||
           (last == w && writer_elementwise.at(result) && param_read_elementwise.at(param));
  }
};

/// The alias safety of every (result, parameter) pair of |exe|.
AliasSafety analyze_aliasing(const compiler::Executable& exe);

}  // namespace vtrn::torch_adapter::eager
