// Internal to the executor: the kernel implementations it dispatches to.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "vtrn/hlo/ir.h"
#include "vtrn/runtime/kernels_reduce.h"

namespace vtrn::runtime::kernels {

/// A value's storage during a run.
struct Buf {
  const std::uint8_t* ptr = nullptr;
  std::uint8_t* mut = nullptr;  ///< same as ptr when writable
  /// An input read where it lies as a strided view (LoadedExecutable::run's input strides):
  /// the element stride of each dim of the value's type, |ptr| its first element. Only fused
  /// loops see such a value; nullptr: dense, row-major.
  const std::int64_t* strides = nullptr;
};

/// A fused elementwise loop (optionally ending in a reduce), built once per kernel.
class FusedProgram {
 public:
  /// Builds the loop for ops |op_indices| of |block| (the last one is the root). Throws
  /// ExecError for a dtype the fused loops do not support.
  FusedProgram(const hlo::Block& block, const std::vector<int>& op_indices,
               const std::vector<const hlo::Literal*>& constant_of_value);
  /// Block values read by the loop.
  const std::vector<int>& inputs() const { return input_values_; }
  int output() const { return output_value_; }
  /// Values of the loop other than the root's that are needed outside it (returned, or read
  /// by a later kernel): the loop writes them too.
  const std::vector<int>& extra_outputs() const { return extra_values_; }
  /// |values| is indexed by block value number; |extra| holds one buffer per extra output.
  void run(const std::vector<Buf>& values, std::uint8_t* out, int threads,
           const std::vector<std::uint8_t*>& extra = {}) const;

  // Row blocks (kernels_chain.cc): a loop whose domain is |rows| rows of equal length (a
  // reduce: its outputs, when the reduced dims are trailing) can run rows [r0, r1) alone.
  /// The rows the loop can be split into: a trailing reduce's outputs, any divisor of the domain
  /// for an elementwise loop (returns |want| when it divides), 0 when it cannot be split.
  std::int64_t row_count(std::int64_t want) const;
  /// Whether the loop reads the values in |row_size| (value -> elements per row, -1 when the
  /// value is not one of them) only within the row it computes: elementwise, or a per-row
  /// value broadcast along the row.
  bool reads_rows_locally(const std::vector<std::int64_t>& row_size, std::int64_t rows) const;
  /// Rows [r0, r1) of |rows|; a reduce folds them into |acc| (its whole accumulator array, 8
  /// bytes per output) and stores those outputs.
  void run_rows(const std::vector<Buf>& values, std::uint8_t* out, std::int64_t rows,
                std::int64_t r0, std::int64_t r1, std::int64_t* acc) const;
  bool reduces() const { return reduce_; }
  std::int64_t size() const { return n_; }
  std::int64_t output_size() const { return out_n_; }

  enum class Cls : std::uint8_t { kF32, kF64, kI64 };  ///< chunk element type
  struct Slot {
    Cls cls;
    hlo::DType dtype;      ///< the value's dtype: results are rounded/wrapped to it
    bool uniform = false;  ///< the same value at every element (a scalar, or computed from them)
  };
  struct Load {
    int slot;
    int value;  ///< block value read
    hlo::DType dtype;
    int mode;                           ///< 0 contiguous, 1 scalar, 2 strided, 3 constant
    std::vector<std::int64_t> strides;  ///< mode 2: source element stride per domain dim
    /// mode 2: the domain as this load walks it, size-1 dims dropped and each dim merged into
    /// the one outside it where the source steps through both as one (a [128, 16] table
    /// broadcast over [8, 8, 128, 16] is [64] of stride 0 by [2048] of stride 1): runs along
    /// the last walked dim are as long as the source allows, not one domain row.
    std::vector<std::int64_t> walk_dims, walk_strides;
    /// mode 2: per domain dim, the dim of the source it steps through (-1: broadcast along it);
    /// a strided source (Buf::strides) is walked with its own strides through this map.
    std::vector<int> source_dim;
    double cd = 0;  ///< mode 3
    std::int64_t ci = 0;
  };
  struct Instr {
    hlo::OpKind kind;
    int dst, a = -1, b = -1, c = -1;
    int d = -1;  ///< only a folded update's (Update) fourth operand
    hlo::Comparison cmp = hlo::Comparison::kEQ;
    hlo::DType in_dtype;
    /// Every operand is uniform: computed once per run, on one element.
    bool uniform = false;
    /// A select on a uniform predicate: its result is the chosen operand's slot, and what only
    /// the other operand needs is not computed.
    bool picks = false;
    /// A float multiply of a per-element operand by a uniform one: where the uniform one is
    /// exactly 1 in a run, its result is the other operand's slot and it is not computed.
    /// (add's alpha is a runtime scalar, 1 in nearly every call; x * 1 is x in IEEE arithmetic,
    /// -0, infinities, NaNs and subnormals included.)
    bool scales = false;
    /// Computed with ATen's own kernel's function for the op (hlo::Op::vml), where installed.
    bool vml = false;
    /// exp with SLEEF on every element (hlo::Op::sleef).
    bool sleef = false;
    /// A negate, exponential, add of 1 and divide folded into this divide (fold_logistic):
    /// 1 / (1 + exp(-a)) or a / (1 + exp(-a)), one pass over the chunk instead of four. It
    /// reads |a| alone, and |sleef| is the exponential's. kSiluBackward is such a sigmoid s of
    /// |b| folded with the four ops after it into this multiply: (a * s) * fma(b, 1 - s, 1).
    enum class Logistic : std::uint8_t { kNone, kSigmoid, kSilu, kSiluBackward };
    Logistic logistic = Logistic::kNone;
    /// An optimizer's update folded into one instruction (fold_update), each operation rounded
    /// as before, in one pass over its four operands instead of two or three. |a| is uniform
    /// (the scalar s) and the others float32 per element:
    /// kFmaScaled: fma(s * b, c, d) (addcmul); kAddScaledQuotient: d + s * b / c (addcdiv);
    /// kFmaDifference: fma(s, b - c, d) (lerp with a scalar weight).
    enum class Update : std::uint8_t { kNone, kFmaScaled, kAddScaledQuotient, kFmaDifference };
    Update update = Update::kNone;
    std::array<int, 4> operands() const { return {a, b, c, d}; }
  };

 private:
  /// acc[lo, hi) (in the accumulator class: float, double or int64) = the reduce's init value.
  void fill_init(const std::vector<Buf>& values, std::int64_t* acc, std::int64_t lo,
                 std::int64_t hi) const;
  void run_range(const std::vector<Buf>& values, std::uint8_t* out, std::int64_t lo,
                 std::int64_t hi, Reducer* reducer, const std::vector<std::uint8_t*>& extra) const;
  /// Places each slot's chunk in the scratch (slot_unit_, units_): slots whose values are never
  /// needed at the same time share one chunk.
  void assign_chunks();
  /// Sets chunk_: as long as keeps the slots a chunk writes within the scratch budget, whole
  /// rows for a reduce over short rows (kernels_fused_chunks.cc).
  void choose_chunk();
  /// Folds each sigmoid and silu the lowerings spell as float32 negate, exponential, add 1 and
  /// divide (ATen's vectorized formulas) into its divide (Instr::logistic), then each silu
  /// gradient around such a sigmoid into its last multiply, where the values in between are
  /// read by nothing else.
  void fold_logistic();
  /// Folds the optimizers' updates (addcmul, addcdiv and lerp by a scalar, as the lowerings
  /// spell them in float32) each into its last instruction (Instr::update), where the values in
  /// between are read by nothing else (kernels_fused_update.cc).
  void fold_update();

  std::vector<std::int64_t> domain_;
  std::int64_t n_ = 0;
  std::vector<Slot> slots_;
  std::vector<Load> loads_;
  std::vector<Instr> instrs_;
  std::vector<int> input_values_;
  int output_value_ = -1;
  std::vector<int> extra_values_, extra_slots_;
  std::vector<hlo::DType> extra_dtypes_;
  int root_slot_ = -1;
  /// Per slot, where its chunk starts in the scratch, in chunks of float32 (a slot of 8-byte
  /// elements takes two); units_ of them in all.
  std::vector<std::int64_t> slot_unit_;
  std::int64_t units_ = 0;
  std::int64_t chunk_ = 0;  ///< elements per chunk (kernels_fused.cc)
  bool has_picks_ = false;
  bool has_scales_ = false;
  hlo::DType out_dtype_ = hlo::DType::kF32;
  // Reduce root.
  bool reduce_ = false;
  ReduceLayout reduce_layout_;
  std::int64_t out_n_ = 0;
  int init_value_ = -1;  ///< block value of the init (when not a constant)
  double init_const_ = 0;
  std::int64_t init_const_i_ = 0;
  bool init_is_const_ = false;
};

/// Row-major element strides of |dims|.
std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& dims);

/// One block of Philox-4x32-10 (Salmon et al., SC'11; the generator of Random123): |out| from
/// the 128-bit counter |ctr| and the 64-bit key |key|. rng_bit_generator follows XLA's Philox:
/// the state's first 64 bits are the key, its next 128 (64 of a 2 x u64 state) the counter;
/// block j uses counter + j, and the new state holds counter + the number of blocks.
void philox4x32_10(const std::uint32_t ctr[4], const std::uint32_t key[2], std::uint32_t out[4]);

/// Consecutive fused loops over the same rows, such as a softmax's max, exp-and-sum and divide
/// (kernels_chain.cc): run block of rows by block of rows, each block through every loop while
/// it is in cache. Each loop computes what it computes alone (a reduce folds each row in its
/// fixed order), so the results are the same bytes.
class RowChain {
 public:
  /// The chain |loops| (in execution order) can form over the block's values, or nullopt.
  /// |bitcasts[j]|: the (result, operand) of the reshapes that run after loop j.
  static std::optional<RowChain> make(
      const hlo::Block& block, const std::vector<const FusedProgram*>& loops,
      const std::vector<std::vector<std::pair<int, int>>>& bitcasts = {});
  /// |outs|: each loop's output buffer. Loops that write a buffer an earlier loop reads run one
  /// after the other instead.
  void run(const std::vector<Buf>& values, const std::vector<std::uint8_t*>& outs,
           int threads) const;

 private:
  std::vector<const FusedProgram*> loops_;
  std::int64_t rows_ = 0;
  std::vector<std::pair<int, std::size_t>> reads_;  ///< (value, bytes) read from outside
  std::vector<std::size_t> out_bytes_;
};

/// Non-fused ops. |in| and |out| point at the operands' and results' storage.
void run_op(const hlo::Block& block, const hlo::Op& op, const std::vector<const std::uint8_t*>& in,
            const std::vector<std::uint8_t*>& out, int threads);

/// stablehlo.reduce with any reducer region and operand count (kernels_region_reduce.cc).
void region_reduce(const hlo::Block& block, const hlo::Op& op,
                   const std::vector<const std::uint8_t*>& in,
                   const std::vector<std::uint8_t*>& out);

void dot_general(const hlo::Block& block, const hlo::Op& op, const std::uint8_t* lhs,
                 const std::uint8_t* rhs, std::uint8_t* out);

/// stablehlo.convolution of float operands (kernels_conv.cc).
void convolution(const hlo::Block& block, const hlo::Op& op, const std::uint8_t* lhs,
                 const std::uint8_t* rhs, std::uint8_t* out);

}  // namespace vtrn::runtime::kernels
