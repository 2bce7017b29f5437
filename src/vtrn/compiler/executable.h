// The compiler's output: the optimized module, cut into kernels, each with its modeled
// NeuronCore time, and its binary format ("NEFF" in vtrn's cache; not AWS's format).
//
// Binary layout (little-endian):
//   magic "VTRNNEFF" | u32 format version | u32 header bytes (32) | u64 payload bytes |
//   u64 FNV-1a-64 checksum of the payload | payload
// The payload holds the compiler version, the options, the printed optimized module and the
// kernel table (ops, engine, modeled time). Loading parses the printed module (already
// optimized) and checks that the kernel table is the one the compiler forms for it (a cheap
// grouping pass; nothing is recompiled) with known engines and finite, non-negative modeled
// costs. Every length read from the bytes is checked against the bytes left, so no field can
// make the loader allocate more than the input's size. The buffer assignment is not stored:
// loading recomputes it from the module and the kernel table (buffer_assignment.h).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "vtrn/compiler/buffer_assignment.h"
#include "vtrn/cost/kernel_cost.h"
#include "vtrn/hlo/ir.h"

namespace vtrn::compiler {

/// Bumped whenever the compiler's output for a given input may change. Part of the cache key.
inline constexpr const char* kCompilerVersion = "vtrn-compiler 0.1.17";
inline constexpr std::uint32_t kFormatVersion = 1;

struct CompileOptions {
  int opt_level = 2;   ///< 0: no passes; 1: DCE; 2: constant folding, CSE, DCE
  bool fusion = true;  ///< fuse elementwise/broadcast/convert chains and a trailing reduce
  /// "O2 fusion=1": the options' part of the cache key.
  std::string key() const;
};

enum class KernelKind : std::uint8_t {
  kFused,     ///< elementwise/broadcast/convert ops, optionally headed by one dot_general
              ///< (its epilogue) and optionally ending in a reduce; a value of it needed
              ///< outside is written too (multi-output)
  kOp,        ///< one op that is not fused (dot_general, transpose, gather, ...)
  kBitcast,   ///< reshape: no data moves
  kConstant,  ///< materialized when the executable is loaded
};

struct Kernel {
  std::string name;  ///< "fusion.3", "dot_general.5"
  KernelKind kind = KernelKind::kOp;
  std::vector<int> ops;  ///< indices into module.main.ops, in order; the last one is the root
  cost::KernelCost cost;
};

struct Executable {
  hlo::Module module;
  std::vector<Kernel> kernels;
  CompileOptions options;
  /// Where the executor keeps each intermediate (recomputed on load, like the kernel table).
  BufferAssignment buffers;

  /// Sum of the kernels' modeled times.
  double modeled_time_s() const;
  /// The planned peak host scratch of one run: the arena holding every intermediate.
  std::int64_t peak_scratch_bytes() const { return buffers.arena_bytes; }
};

/// Raised for a malformed, truncated or corrupted executable.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Verifies |module|, runs the passes, fuses and annotates each kernel with its modeled time.
/// Throws hlo::Error for a module that does not verify.
Executable compile(const hlo::Module& module, const CompileOptions& options = {},
                   const cost::CostModel& model = cost::CostModel::trn2());

std::vector<std::uint8_t> serialize(const Executable& exe);
/// Throws FormatError (bad magic, version, size, checksum, payload, or a kernel table that is not
/// the module's).
Executable deserialize(std::span<const std::uint8_t> bytes);

/// FNV-1a 64-bit hash (the format's checksum).
std::uint64_t fnv1a64(const void* data, std::size_t size);

}  // namespace vtrn::compiler
