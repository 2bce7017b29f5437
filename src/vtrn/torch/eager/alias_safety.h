// Whether an executable may write a result over a parameter it aliases (in-place ops), read
// from its kernels.
//
// Promises: can_alias(r, p) is true only when the kernel computing result r is an elementwise
// loop (it reads element i before writing element i) and no later kernel reads parameter p;
// a bitcast reads nothing and computes nothing. Anything else is written through a staging
// buffer by the launch.
#pragma once

#include <cstddef>
#include <vector>

#include "vtrn/compiler/executable.h"

namespace vtrn::torch_adapter::eager {

/// When an output may be written over an input it aliases (in-place ops): the writing kernel is
/// an elementwise loop (it reads element i before writing element i), and no later kernel reads
/// that input.
struct AliasSafety {
  std::vector<int> param_last_reader;    // per parameter: the last kernel reading it, or -1
  std::vector<int> result_writer;        // per result: the kernel computing it, or -1
  std::vector<bool> writer_elementwise;  // per result: that kernel is an elementwise loop

  bool can_alias(size_t result, size_t param) const {
    const int w = result_writer.at(result);
    return w >= 0 && writer_elementwise.at(result) && param_last_reader.at(param) <= w;
  }
};

/// The alias safety of every (result, parameter) pair of |exe|.
AliasSafety analyze_aliasing(const compiler::Executable& exe);

}  // namespace vtrn::torch_adapter::eager
