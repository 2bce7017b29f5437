// A traced NKI kernel: the tensors it declares and the engine instructions it issues, in
// program order. The Python front end builds one by running the kernel body; every builder
// method checks the hardware rules for its instruction and throws ValidationError with the
// simulator's text, so the error surfaces at the kernel line that issued the instruction.
//
// The program is data only: interpreter.h runs it on real values, schedule.h checks its
// on-chip memory and models its time.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "vtrn/cost/kernel_cost.h"
#include "vtrn/hw/neuroncore.h"
#include "vtrn/nki/access.h"
#include "vtrn/nki/dtype.h"
#include "vtrn/nki/ops.h"

namespace vtrn::nki {

/// A hardware rule the kernel breaks (shape limits, memory kinds, dtypes). Python sees
/// nki.isa.NkiValidationError, an AssertionError as in the AWS simulator.
class ValidationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The kernel needs more SBUF or PSUM than the core has at some point of its program.
class CapacityError : public ValidationError {
 public:
  using ValidationError::ValidationError;
};

enum class Memory : std::uint8_t { kHbm, kSbuf, kPsum };
std::string_view memory_name(Memory memory);  // "hbm", "sbuf", "psum"
Memory parse_memory(std::string_view name);

using cost::Engine;
std::uint8_t engine_bit(Engine engine);
/// "tensor", "vector", "scalar", "gpsimd", "dma", or "auto" for the choice of the scheduler
/// among Vector, Scalar and GpSimd (GpSimd only when no operand is in PSUM).
std::uint8_t parse_engines(std::string_view name, std::uint8_t automatic);

struct TensorDecl {
  std::string name;
  Memory memory = Memory::kSbuf;
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;
  std::string origin;     ///< "kernel.py:42", where the kernel allocated it
  bool external = false;  ///< bound to caller memory (kernel argument or result)

  std::int64_t elements() const;
  /// Bytes one partition holds: the free dimensions' elements times the element size.
  std::int64_t bytes_per_partition() const;
  /// "a_tile (128x512 float32)", or "a_tile (128x512 float32, <detail>)".
  std::string describe(const std::string& detail = "") const;
};

enum class Opcode : std::uint8_t {
  kDmaCopy,
  kTensorCopy,
  kTensorTensor,
  kTensorScalar,
  kActivation,
  kTensorReduce,
  kPartitionReduce,
  kMatmul,
  kTranspose,
  kMemset,
  kSelect,
  kIota,
};
std::string_view opcode_name(Opcode op);

/// Matmul accumulation: auto = the first write to a PSUM element overwrites it, later writes
/// add (nc_matmul's accumulate=None).
enum class Accumulate : std::int8_t { kAuto = -1, kOverwrite = 0, kAdd = 1 };

struct Instruction {
  Opcode op = Opcode::kMemset;
  std::string api;           ///< the API name errors use: "tensor_tensor", "nl.load", ...
  std::string origin;        ///< "kernel.py:42"
  std::uint8_t engines = 0;  ///< the engines that may run it (one bit per cost::Engine)
  Access dst;
  std::vector<Access> srcs;
  // Parameters; which ones an opcode reads is documented at its builder.
  AluOp alu0 = AluOp::kBypass, alu1 = AluOp::kBypass, reduce_op = AluOp::kBypass;
  bool reverse0 = false, reverse1 = false, negate = false;
  double imm0 = 0, imm1 = 0;
  int operand0 = -1, operand1 = -1;  ///< srcs index of a tile operand, -1 for the immediate
  ActFunc func = ActFunc::kCopy;
  int bias = -1, scale = -1;  ///< srcs index of the activation's bias / scale tile
  bool has_reduce = false;    ///< writes a per-partition reduction to reduce_dst
  Access reduce_dst;
  std::vector<int> axes;  ///< tensor_reduce: reduced dimensions of srcs[0]
  Accumulate accumulate = Accumulate::kAuto;
  std::vector<std::int64_t> pattern;  ///< iota: (step, count) pairs
  std::vector<std::uint8_t> mask;     ///< per dst element, 1 = write; empty = all
  int scope = -1;                     ///< index into Program::scopes(), -1 outside loops
};

/// The affine_range iterations an instruction sits in: (loop id, iteration), outermost first.
using Scope = std::vector<std::pair<std::int64_t, std::int64_t>>;

class Program {
 public:
  /// A program for |target| ("trn1", "trn2", "trn3", or "gen2".."gen4").
  explicit Program(std::string_view target);

  const hw::CoreArch& arch() const { return *arch_; }
  const std::vector<TensorDecl>& tensors() const { return tensors_; }
  const std::vector<Instruction>& instructions() const { return instructions_; }
  const std::vector<Scope>& scopes() const { return scopes_; }

  std::int32_t add_tensor(TensorDecl decl);
  /// Marks |tensor| as bound to caller memory (a kernel result found once tracing ends).
  void set_external(std::int32_t tensor);

  // Loop scopes of legacy nl.affine_range: iterations may run in parallel, so two iterations
  // must not write the same location (except matmul accumulation into PSUM).
  void enter_iteration(std::int64_t loop, std::int64_t iteration, std::string origin);
  void exit_iteration();

  // Builders. Each validates, appends and returns the instruction's index.

  /// dst <- src element by element in row-major order of each pattern (converting dtypes).
  std::size_t dma_copy(Instruction inst);
  /// dst <- src on a compute engine (same partitions, same elements per partition).
  std::size_t tensor_copy(Instruction inst);
  /// dst <- srcs[0] alu0 srcs[1].
  std::size_t tensor_tensor(Instruction inst);
  /// dst <- (srcs[0] alu0 operand0) alu1 operand1; an operand is imm or a (P, 1) tile in srcs;
  /// reverseN swaps the operand order; optional per-partition reduction of the result.
  std::size_t tensor_scalar(Instruction inst);
  /// dst <- func(srcs[0] * scale + bias); bias a (P, 1) tile, scale imm0 or a (P, 1) tile;
  /// optional per-partition reduction (reduce_op) of the result into reduce_dst.
  std::size_t activation(Instruction inst);
  /// dst <- reduce(alu0) of srcs[0] over the free dimensions |axes|; negate flips the sign.
  std::size_t tensor_reduce(Instruction inst);
  /// dst (1, F) <- reduce(alu0) of srcs[0] (P, F) over partitions.
  std::size_t partition_reduce(Instruction inst);
  /// dst (M, N) in PSUM <- srcs[0]^T (K, M) . srcs[1] (K, N), accumulating per |accumulate|.
  std::size_t matmul(Instruction inst);
  /// dst (F, P) <- srcs[0] (P, F) transposed, on the Tensor engine (into PSUM) or the Vector
  /// engine (32x32 blocks).
  std::size_t transpose(Instruction inst);
  /// dst <- imm0.
  std::size_t memset(Instruction inst);
  /// dst <- mask ? srcs[0] : imm0 (affine_select; the predicate is the instruction mask,
  /// and every element is written).
  std::size_t select(Instruction inst);
  /// dst <- imm0 + partition * imm1 + sum_i step_i * index_i over pattern (step, count) pairs.
  std::size_t iota(Instruction inst);

  /// Points the last instruction (|index|)'s destination at |dst| instead: the front end
  /// writes an expression's value straight into its assignment target. Re-validates; on
  /// failure the program is left unchanged.
  void retarget(std::size_t index, const Access& dst, Accumulate accumulate);

 private:
  std::size_t append(Instruction inst);
  void retarget_checked(Instruction inst, const Access& dst, Accumulate accumulate);
  void check_access(const Instruction& inst, const Access& access, const char* operand) const;
  void check_memory(const Instruction& inst, const Access& access, const char* operand, bool hbm,
                    bool sbuf, bool psum) const;
  void check_partitions(const Instruction& inst, const Access& access, const char* operand) const;
  void check_same_shape(const Instruction& inst, const Access& a, const char* an, const Access& b,
                        const char* bn) const;
  void check_engines(Instruction& inst) const;
  void check_output_dependencies(std::size_t index);
  const TensorDecl& tensor(const Access& access) const;

  const hw::CoreArch* arch_;
  std::vector<TensorDecl> tensors_;
  std::vector<Instruction> instructions_;
  std::vector<Scope> scopes_;
  std::vector<std::string> scope_origins_;
  Scope current_scope_;
  std::vector<std::string> current_origins_;
  int current_scope_index_ = -1;
  struct Write {
    Box box;
    int scope;
    std::size_t instruction;
  };
  std::vector<std::vector<Write>> writes_;  ///< per tensor, writes made inside affine loops
};

}  // namespace vtrn::nki
