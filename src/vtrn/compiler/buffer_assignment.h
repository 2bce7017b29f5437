// Liveness-based buffer assignment: where each intermediate of a compiled module lives while
// the executor runs it, and which results may be written over a donated argument.
//
// Promises:
//  * Every value a kernel computes that is not a result (an intermediate) gets an offset in one
//    arena of arena_bytes; two intermediates share bytes only when their live ranges (from the
//    kernel that computes one to the last kernel that reads it) are disjoint. A kernel's inputs
//    and outputs are live together, so no kernel reads a buffer it (or a fused loop's chunk)
//    writes.
//  * A reducing fused loop and the plain fused loops and reshapes right after it count as one
//    step (the executor may run them as one row chain, interleaving their rows).
//  * A bitcast (reshape) computes nothing: its result is its operand's buffer, so a read of the
//    result, or returning it, keeps the operand's buffer live.
//  * The plan is a function of the module and the kernel table only (deterministic), so a
//    loaded executable recomputes it instead of storing it.
//  * can_write_over(r, a): result r may be computed in argument a's buffer (in place) when they
//    have the same type, the kernel computing r writes it straight to its output buffer, and
//    nothing reads a after that kernel (no later kernel, no result that is a or a bitcast of
//    it); the computing kernel itself may read a only as an elementwise loop does (element i
//    before element i is written).
#pragma once

#include <cstdint>
#include <vector>

#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

struct Kernel;

struct BufferAssignment {
  static constexpr std::int64_t kAlignment = 64;  ///< every offset is a multiple of this

  /// By value number: the byte offset of an intermediate in the arena, or -1 for a value that
  /// is not in it (an argument, a constant, a result, a bitcast or a fused loop's temporary).
  std::vector<std::int64_t> offset;
  /// By value number: the kernel computing the value (for a bitcast, its operand's buffer's),
  /// and the last kernel reading that buffer (kernels.size() when it is returned); -1 if none.
  std::vector<int> def_kernel, last_kernel;
  std::int64_t arena_bytes = 0;         ///< the planned peak scratch of one run
  std::int64_t intermediate_bytes = 0;  ///< every intermediate at once (no reuse), aligned
  /// By argument: the last kernel reading it (kernels.size() when it is returned), -1 if none,
  /// and whether that kernel reads it only element by element (an elementwise fused loop).
  std::vector<int> arg_last_reader;
  std::vector<bool> arg_read_elementwise;
  /// By result: the kernel writing it straight into its output buffer (-1 for an argument,
  /// a constant, a bitcast, or a value returned again at an earlier position), and whether that
  /// kernel is an elementwise loop.
  std::vector<int> result_writer;
  std::vector<bool> result_elementwise;
  /// By result: the argument the module donates to it whose buffer it may be written into
  /// (can_write_over holds), or -1. Each argument is given to one result at most.
  std::vector<int> donor_of_result;
  std::vector<hlo::TensorType> arg_types, result_types;

  /// Whether result |r| may be computed in the buffer of argument |a| (see the header).
  bool can_write_over(std::size_t r, std::size_t a) const;
};

/// Plans the buffers of |block| run as |kernels| (the executable's kernel table).
BufferAssignment assign_buffers(const hlo::Block& block, const std::vector<Kernel>& kernels);

}  // namespace vtrn::compiler
