// The ATen -> StableHLO lowering registry: one entry per ATen op overload (or family), each a
// function that builds the op as HLO from the types of its arguments.
//
// This unit is plain C++ (no PyTorch headers), so lowerings build and test without torch. The
// torch adapter (torch/eager/lowered_kernel.cpp) describes a call as an OpCall: one ArgSpec per
// schema argument, in schema order. Tensors become parameters of the module, Scalars become 0-d
// runtime parameters (so a changing learning rate does not recompile), and everything else (ints,
// bools, dims, dtypes) is static: it is part of the signature and baked into the module.
//
// Numerics follow PyTorch's CPU kernels: float16/bfloat16 are computed in float32 ("opmath")
// and rounded once when stored; integer ops stay integer; type promotion follows
// torch.result_type. A lowering that cannot handle a call (an unclaimed dtype, an argument value
// it does not implement) throws Unsupported, and the op runs through the CPU fallback.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "vtrn/hlo/builder.h"

namespace vtrn::lowering {

using hlo::DType;
using hlo::TensorType;
using hlo::Value;

/// This call cannot be lowered (the reason is for the log); the op falls back to the CPU.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ArgKind : std::uint8_t {
  kNone,        ///< an optional argument that is None (or an argument lowerings ignore)
  kTensor,      ///< types[0]
  kTensorList,  ///< types, one per element; for Tensor?[], ints[k] is 0 where element k is None
                ///< and types lists only the present elements
  kScalar,      ///< a runtime 0-d parameter: types[0] is f64, i64 or pred (the Scalar's kind);
                ///< ints[0], when present, has bit d set when the value fits DType d
  kScalarList,  ///< runtime 0-d parameters, one per element (Scalar[])
  kInt,         ///< ints[0] (also SymInt)
  kInts,        ///< ints
  kFloat,       ///< real; also a Scalar an entry declares static (is_integral: ints[0] == 1)
  kBool,        ///< ints[0]
  kString,      ///< text
  kDType,       ///< dtype
};

/// One schema argument of a call.
struct ArgSpec {
  ArgKind kind = ArgKind::kNone;
  std::vector<TensorType> types;
  std::vector<std::int64_t> ints;
  double real = 0.0;
  std::string text;
  DType dtype = DType::kF32;
  /// kTensor: a 0-d tensor on the CPU, passed by value (it promotes like a 0-d tensor).
  bool cpu_scalar_tensor = false;
  /// kTensor: the tensor is its buffer's last two dims transposed (a contiguous tensor's .t()
  /// or .mT). The module's parameter has the stored shape and the lowering sees its transpose,
  /// which a dot folds into its dimension numbers, so the buffer is read where it lies.
  bool stored_transposed = false;
};

/// A call as the lowering sees it.
struct OpCall {
  std::vector<ArgSpec> args;      ///< schema order
  std::vector<DType> out_dtypes;  ///< dtypes of the out=/in-place outputs (empty: functional)
  /// The outputs are arguments the op updates in place (self, a foreach list), not out=.
  bool in_place = false;
  /// torch.get_default_dtype(): the dtype of Python floats and of integer true division.
  DType default_float = DType::kF32;
};

class Lowerer;
using LowerFn = std::function<std::vector<Value>(Lowerer&)>;

/// One registry entry: an ATen overload and how to lower it.
struct OpLowering {
  std::string name;           ///< "add.out" (without "aten::")
  std::vector<DType> dtypes;  ///< the dtypes it is claimed (and tested) for; others fall back
  LowerFn lower;
  /// Output element i depends only on input element i (after broadcasting): Adaptive Eager
  /// Execution may fuse it with its neighbours, and it may write in place over an input.
  bool elementwise = false;
  std::vector<int> static_scalars;  ///< Scalar arguments baked into the module (kFloat)
  /// Scalar arguments the CPU converts to the op's dtype with a range check (alpha, clamp's
  /// bounds): their ArgSpec's ints[0] says which dtypes the value fits (see check_fits).
  std::vector<int> checked_scalars;
  std::vector<int> runtime_floats;  ///< float arguments passed as runtime parameters (kScalar)
  /// The lowering gives the CPU's result (or its error, by throwing Unsupported) for zero-size
  /// inputs too (it checks the ones it reads), so those run natively; entries without it send
  /// them to the CPU fallback. native_batch_norm_backward gets empty saved statistics in
  /// evaluation.
  bool zero_size = false;
  /// complex64 tensors reach the lowering as their view_as_real: a float32 parameter of their
  /// shape plus a trailing dim of 2 (real, imaginary), while the call's ArgSpec and out_dtypes
  /// say complex64. The lowering returns complex results as such pairs, marked with
  /// Lowerer::complex_result. Without it a call with a complex tensor falls back.
  bool complex_pairs = false;
  /// Tensor arguments stored transposed reach the lowering as ArgSpec::stored_transposed
  /// (matmuls, whose dots read them in place); for every other entry such a tensor is copied
  /// to a dense one first.
  bool reads_stored_transposed = false;
};

/// All entries, built on first use.
const std::vector<OpLowering>& registry();
/// The entry for |name|, or nullptr.
const OpLowering* find_lowering(const std::string& name);

/// The dtypes a lowering claims, as torch names ("float32", "bfloat16", "int64", "bool").
std::string torch_dtype_name(DType dtype);

/// A lowering's result for an output it does not write (an in-place argument it leaves as is).
inline constexpr Value kUnchanged{-2};

struct LoweredCall {
  hlo::Module module;         ///< returns the written outputs, in order
  std::vector<bool> written;  ///< per output of the call: false where the lowering said kUnchanged
  /// Per result of the module: a complex64 value as float32 pairs (OpLowering::complex_pairs).
  std::vector<bool> complex;
};

/// Builds the one-op module for |call| with |entry|. Its parameters are one per tensor, tensor
/// list element and runtime Scalar of the call, in schema order. Results are converted to the
/// in-place dtypes. Throws Unsupported or hlo::Error.
LoweredCall lower_call(const OpLowering& entry, const OpCall& call);

/// torch.result_type over tensors and scalars, categories included. A wrapped float scalar
/// takes |default_float| (torch.get_default_dtype()), a wrapped integer int64.
struct PromotionInput {
  DType dtype;
  enum Kind { kDimTensor, kZeroDimTensor, kWrappedScalar } kind;
};
DType result_type(const std::vector<PromotionInput>& inputs, DType default_float = DType::kF32);
/// c10::canCast: whether PyTorch writes a |from| result into a |to| output (no complex to real,
/// float to integer, or non-bool to bool).
bool can_cast(DType from, DType to);
/// PyTorch's promoteTypes table.
DType promote_types(DType a, DType b);
/// The dtype PyTorch computes |dtype| in: float32 for float16/bfloat16, the dtype otherwise.
DType opmath(DType dtype);

/// The builder a lowering writes into, with the call's arguments as values and the helpers
/// most lowerings need.
class Lowerer {
 public:
  Lowerer(const OpCall& call, const OpLowering& entry);
  /// A lowerer for |entry| inside another lowering (foreach applies a per-tensor entry to each
  /// element): it writes into |builder| and takes its arguments' values from |values|.
  Lowerer(hlo::Builder& builder, const OpCall& call, const OpLowering& entry,
          std::vector<std::vector<Value>> values);

 private:
  std::unique_ptr<hlo::Builder> owned_builder_;

 public:
  hlo::Builder& b;
  const OpCall& call;
  const OpLowering& entry;

  // Arguments (|i| is the schema position).
  const ArgSpec& arg(int i) const;
  bool has(int i) const { return arg(i).kind != ArgKind::kNone; }
  Value tensor(int i);
  const std::vector<Value>& tensors(int i);
  /// The values of argument |i|: its tensor, list elements or scalar parameters.
  const std::vector<Value>& values(int i) const { return values_.at(static_cast<std::size_t>(i)); }
  /// A runtime Scalar converted to |dtype| (a static one becomes a constant).
  Value scalar(int i, DType dtype);
  std::int64_t integer(int i) const;
  std::vector<std::int64_t> ints(int i) const;
  double real(int i) const;
  bool flag(int i) const;
  /// How argument |i| promotes (tensor, 0-d tensor, or wrapped scalar) with its dtype.
  PromotionInput promotion(int i) const;
  /// torch.result_type of |inputs| under the call's default dtype.
  DType result_type(const std::vector<PromotionInput>& inputs) const {
    return lowering::result_type(inputs, call.default_float);
  }
  /// Tensor (or Scalar) argument |i| promoted as TensorIterator does: converted to |common|
  /// (rounded, as the CPU's promoted copy is), then to opmath(|common|) to compute.
  Value promoted(int i, DType common);
  /// The dtype to round result |k| to before it is stored: |result|, which lower_call then casts
  /// to an in-place output's dtype, as TensorIterator does. Throws Unsupported (the CPU then
  /// decides, and raises its error where it refuses) for an out= output of another dtype, or
  /// an in-place output |result| can't be cast to.
  DType out_dtype(int k, DType result) const;
  /// Throws Unsupported (the CPU raises "value cannot be converted to type ... without
  /// overflow") when Scalar argument |i| does not fit |dtype|. A no-op for an argument that
  /// carries no range (not a checked Scalar).
  void check_fits(int i, DType dtype) const;
  /// The dtype of out= output |k|, when the call has one.
  std::optional<DType> given_out_dtype(int k) const;

  // Helpers.
  DType dtype(Value v) const { return b.type(v).dtype; }
  /// By value: adding ops may move the builder's type table.
  std::vector<std::int64_t> shape(Value v) const { return b.type(v).dims; }
  int rank(Value v) const { return b.type(v).rank(); }
  Value convert(Value v, DType dtype);
  Value constant(double value, DType dtype) { return b.scalar(dtype, value); }
  /// A constant of |like|'s type (broadcast).
  Value full_like(Value like, double value);
  /// NumPy broadcasting of all |values| to one shape.
  std::vector<Value> broadcast(std::vector<Value> values);
  Value broadcast_to(Value v, const std::vector<std::int64_t>& shape);
  /// Wraps a negative dim; throws Unsupported-free IndexError text for out of range.
  std::int64_t wrap_dim(std::int64_t dim, int rank) const;
  /// Reduces |x| over |dims| with |kind|, keeping size-1 dims when |keepdim|.
  /// |cascade_sum|: an add over float32 that torch.sum or torch.mean asked for (Op::cascade_sum).
  Value reduce(Value x, std::vector<std::int64_t> dims, hlo::ReduceKind kind, bool keepdim,
               bool cascade_sum = false, bool vec_sum = false);
  /// Throws Unsupported when |dtype| is not among the entry's dtypes.
  void require_claimed(DType dtype) const;

  // complex64 as float32 pairs (OpLowering::complex_pairs).
  /// Whether tensor argument |i| is complex64 (its value is then float32 [..., 2]).
  bool is_complex(int i) const;
  /// The complex64 result whose real and imaginary parts are |re| and |im| (one shape).
  Value complex_result(Value re, Value im);
  /// |pairs| (float32 [..., 2]) as a complex64 result.
  Value as_complex_result(Value pairs);
  bool is_complex_result(Value v) const;

 private:
  std::vector<std::vector<Value>> values_;  // per argument: its parameters
  std::vector<int> complex_results_;        // value ids made by complex_result
};

// Registration of each family (lowerings_*.cc).
void add_elementwise_lowerings(std::vector<OpLowering>& r);
void add_reduction_lowerings(std::vector<OpLowering>& r);
void add_nn_lowerings(std::vector<OpLowering>& r);
void add_conv_lowerings(std::vector<OpLowering>& r);
void add_pool_lowerings(std::vector<OpLowering>& r);
void add_activation_lowerings(std::vector<OpLowering>& r);
void add_grouped_mm_lowerings(std::vector<OpLowering>& r);
void add_norm_lowerings(std::vector<OpLowering>& r);
void add_rms_norm_lowerings(std::vector<OpLowering>& r);
void add_nki_lowerings(std::vector<OpLowering>& r);
void add_collective_lowerings(std::vector<OpLowering>& r);
void add_data_lowerings(std::vector<OpLowering>& r);
void add_optimizer_lowerings(std::vector<OpLowering>& r);
void add_factory_lowerings(std::vector<OpLowering>& r);
void add_integer_lowerings(std::vector<OpLowering>& r);
void add_scan_lowerings(std::vector<OpLowering>& r);
void add_index_lowerings(std::vector<OpLowering>& r);
/// After the elementwise entries: makes add, sub and mul take complex64, and adds polar.
void add_complex_lowerings(std::vector<OpLowering>& r);
void add_mask_lowerings(std::vector<OpLowering>& r);
/// vtrn::philox_* (random numbers drawn inside a module, as the device's random kernels draw).
void add_random_lowerings(std::vector<OpLowering>& r);
/// After the others: foreach entries reuse the per-tensor entries.
void add_foreach_lowerings(std::vector<OpLowering>& r);

}  // namespace vtrn::lowering
