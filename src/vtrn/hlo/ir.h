// The StableHLO IR of vtrn: tensor types, literals, ops and modules.
//
// A module holds one function, `main`. A function (and every region of an op, such as the
// combiner of a reduce) is a Block: typed values numbered from 0, the block's arguments first,
// then the results of its ops in order. Ops refer to values by number. Every op is verified
// when it is added (see verify.h), so a Block is always well typed.
#pragma once

#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "vtrn/hlo/dtype.h"

namespace vtrn::hlo {

/// Every error of the hlo layer: a bad op, a malformed text, an unsupported feature.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//===----------------------------------------------------------------------===//
// Types and literals
//===----------------------------------------------------------------------===//

struct TensorType {
  DType dtype = DType::kF32;
  std::vector<std::int64_t> dims;  ///< static sizes, row-major; empty for a scalar

  TensorType() = default;
  TensorType(DType d, std::vector<std::int64_t> s) : dtype(d), dims(std::move(s)) {}

  int rank() const { return static_cast<int>(dims.size()); }
  std::int64_t num_elements() const;
  std::int64_t byte_size() const { return num_elements() * dtype_size(dtype); }
  /// "tensor<2x3xf32>"
  std::string str() const;
  bool operator==(const TensorType&) const = default;
};

/// A dense constant: its type and its elements in storage form (little-endian, row-major).
/// A splat holds one element that fills the whole type.
struct Literal {
  TensorType type;
  std::vector<std::uint8_t> data;
  bool splat = false;

  /// Element |i| (0 for a splat) as double / complex; for integers the exact value as int64.
  double get_double(std::int64_t i) const;
  std::int64_t get_int(std::int64_t i) const;
  std::complex<float> get_complex(std::int64_t i) const;
  /// Every element, expanded (a splat repeated num_elements times).
  std::vector<std::uint8_t> expanded() const;

  static Literal scalar(DType dtype, double value);
  /// A splat of |value| (converted to |type|'s dtype, bf16/f16 rounded to nearest even).
  static Literal splat_of(TensorType type, double value);
  /// Elements from doubles (converted to |type|'s dtype).
  static Literal from_doubles(TensorType type, const std::vector<double>& values);
  bool operator==(const Literal&) const = default;
};

/// Stores |value| converted to |dtype| at |dst| (bf16/f16 round to nearest even, integers
/// truncate toward zero and wrap, pred is value != 0).
void store_double(DType dtype, double value, void* dst);
/// Reads one element of |dtype| at |src| as a double.
double load_double(DType dtype, const void* src);

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

// X(enum, MLIR name without "stablehlo.", class). Classes: U unary elementwise, B binary
// elementwise, O anything else.
#define VTRN_HLO_OPS(X)                             \
  X(kAbs, "abs", U)                                 \
  X(kCeil, "ceil", U)                               \
  X(kConvert, "convert", U)                         \
  X(kCosine, "cosine", U)                           \
  X(kExp, "exponential", U)                         \
  X(kExpm1, "exponential_minus_one", U)             \
  X(kFloor, "floor", U)                             \
  X(kLog, "log", U)                                 \
  X(kLog1p, "log_plus_one", U)                      \
  X(kLogistic, "logistic", U)                       \
  X(kNegate, "negate", U)                           \
  X(kNot, "not", U)                                 \
  X(kRoundEven, "round_nearest_even", U)            \
  X(kRsqrt, "rsqrt", U)                             \
  X(kSign, "sign", U)                               \
  X(kSine, "sine", U)                               \
  X(kSqrt, "sqrt", U)                               \
  X(kTanh, "tanh", U)                               \
  X(kAdd, "add", B)                                 \
  X(kAnd, "and", B)                                 \
  X(kDivide, "divide", B)                           \
  X(kMaximum, "maximum", B)                         \
  X(kMinimum, "minimum", B)                         \
  X(kMultiply, "multiply", B)                       \
  X(kOr, "or", B)                                   \
  X(kPower, "power", B)                             \
  X(kRemainder, "remainder", B)                     \
  X(kSubtract, "subtract", B)                       \
  X(kXor, "xor", B)                                 \
  X(kAtan2, "atan2", B)                             \
  X(kCompare, "compare", O)                         \
  X(kSelect, "select", O)                           \
  X(kClamp, "clamp", O)                             \
  X(kFma, "fma", O)                                 \
  X(kConstant, "constant", O)                       \
  X(kIota, "iota", O)                               \
  X(kBroadcastInDim, "broadcast_in_dim", O)         \
  X(kReshape, "reshape", O)                         \
  X(kTranspose, "transpose", O)                     \
  X(kSlice, "slice", O)                             \
  X(kDynamicSlice, "dynamic_slice", O)              \
  X(kDynamicUpdateSlice, "dynamic_update_slice", O) \
  X(kConcatenate, "concatenate", O)                 \
  X(kPad, "pad", O)                                 \
  X(kReverse, "reverse", O)                         \
  X(kReduce, "reduce", O)                           \
  X(kDotGeneral, "dot_general", O)                  \
  X(kConvolution, "convolution", O)                 \
  X(kGather, "gather", O)                           \
  X(kScatter, "scatter", O)                         \
  X(kSort, "sort", O)                               \
  X(kRngBitGenerator, "rng_bit_generator", O)       \
  X(kCustomCall, "custom_call", O)                  \
  X(kBitcastConvert, "bitcast_convert", O)          \
  X(kReturn, "return", O)

enum class OpKind : std::uint8_t {
#define VTRN_X(e, n, c) e,
  VTRN_HLO_OPS(VTRN_X)
#undef VTRN_X
};

/// "add", "dot_general" (without the "stablehlo." prefix).
std::string_view op_name(OpKind kind);
/// The op's name in MLIR text: "stablehlo.add"; "math.fma" for kFma. StableHLO has no fused
/// multiply-add (a * b + c rounded once), and ATen's CPU kernels compute add's alpha, addcmul,
/// lerp and the norms with one; MLIR's math dialect has it, elementwise on tensors.
std::string qualified_op_name(OpKind kind);
/// The op named |name| (without prefix), or false.
bool op_from_name(std::string_view name, OpKind* out);
bool is_unary_elementwise(OpKind kind);
/// The ops that may carry Op::vml: exponential, log, sqrt, sine, cosine, tanh.
bool has_vml_form(OpKind kind);
bool is_binary_elementwise(OpKind kind);
/// Elementwise in the fusion sense: unary, binary, compare, select, clamp, fma.
bool is_elementwise(OpKind kind);

/// rng_bit_generator's algorithm; vtrn runs Philox for every one of them.
enum class RngAlgorithm : std::uint8_t { kDefault, kThreeFry, kPhilox };
std::string_view rng_algorithm_name(RngAlgorithm a);  // "DEFAULT", "THREE_FRY", "PHILOX"
std::optional<RngAlgorithm> rng_algorithm_from_name(std::string_view name);

enum class Comparison : std::uint8_t { kEQ, kNE, kGE, kGT, kLE, kLT };
enum class CompareType : std::uint8_t { kNone, kFloat, kTotalOrder, kSigned, kUnsigned };
std::string_view comparison_name(Comparison c);     // "EQ"
std::string_view compare_type_name(CompareType t);  // "FLOAT" ("NOTYPE" for kNone)
/// The enum spelled |name| (comparison_name / compare_type_name), or nullopt.
std::optional<Comparison> comparison_from_name(std::string_view name);
std::optional<CompareType> compare_type_from_name(std::string_view name);

struct DotDims {
  std::vector<std::int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
  bool operator==(const DotDims&) const = default;
};

struct GatherDims {
  std::vector<std::int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  std::int64_t index_vector_dim = 0;
  bool operator==(const GatherDims&) const = default;
};

struct ScatterDims {
  std::vector<std::int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  std::int64_t index_vector_dim = 0;
  bool operator==(const ScatterDims&) const = default;
};

/// stablehlo.convolution's dimension_numbers: where the batch, feature and spatial dims of the
/// input (lhs), the kernel (rhs) and the result are. Spatial dims are listed in window order.
struct ConvDimensionNumbers {
  std::int64_t input_batch = 0, input_feature = 1;
  std::vector<std::int64_t> input_spatial;
  std::int64_t kernel_input_feature = 1, kernel_output_feature = 0;
  std::vector<std::int64_t> kernel_spatial;
  std::int64_t output_batch = 0, output_feature = 1;
  std::vector<std::int64_t> output_spatial;

  /// PyTorch's layouts for |spatial| window dims: input and result [N, C, *spatial], kernel
  /// [O, I, *spatial].
  static ConvDimensionNumbers channels_first(int spatial);
  bool operator==(const ConvDimensionNumbers&) const = default;
};

/// The attributes of stablehlo.convolution. Each window vector has one entry per spatial dim;
/// padding may be negative (it then crops the dilated input).
struct ConvAttrs {
  std::vector<std::int64_t> window_strides, padding_low, padding_high, lhs_dilation, rhs_dilation;
  ConvDimensionNumbers dims;
  std::int64_t feature_group_count = 1, batch_group_count = 1;
  bool operator==(const ConvAttrs&) const = default;
};

struct Block;

/// One op. Which attribute fields are used depends on |kind| (see each field).
struct Op {
  OpKind kind = OpKind::kAdd;
  std::vector<int> operands;  ///< value numbers in the enclosing block
  std::vector<int> results;   ///< value numbers defined by this op

  /// broadcast_in_dim: broadcast_dimensions; transpose: permutation; reduce, reverse:
  /// dimensions; dynamic_slice, gather: slice_sizes.
  std::vector<std::int64_t> dims;
  /// slice
  std::vector<std::int64_t> start_indices, limit_indices, strides;
  /// pad
  std::vector<std::int64_t> edge_padding_low, edge_padding_high, interior_padding;
  /// concatenate, iota, sort: dimension.
  std::int64_t dimension = 0;
  Comparison comparison = Comparison::kEQ;  ///< compare
  CompareType compare_type = CompareType::kNone;
  DotDims dot;                                          ///< dot_general
  ConvAttrs conv;                                       ///< convolution
  GatherDims gather;                                    ///< gather
  ScatterDims scatter;                                  ///< scatter
  bool is_stable = false;                               ///< sort
  bool indices_are_sorted = false;                      ///< gather, scatter
  bool unique_indices = false;                          ///< scatter
  RngAlgorithm rng_algorithm = RngAlgorithm::kDefault;  ///< rng_bit_generator
  /// exponential, log, sqrt, sine, cosine, tanh on float32: computed as ATen's own kernel for
  /// that op computes it (runtime/aten_unary.h), not as ATen computes it inside other ops.
  /// Written as the attribute `vtrn.math = "vml"`.
  bool vml = false;
  /// exponential on float32 computed with SLEEF's vector function for every element, a tail as
  /// a partial vector, as ATen's Vectorized<float>::exp computes it inside softmax and
  /// log_softmax (vec::map): not with the libm tail of its cpu_kernel_vec ops, the executor's
  /// default. Written as the attribute `vtrn.math = "sleef"`.
  bool sleef = false;
  /// dot_general lowered from torch.mm or torch.bmm: computed as ATen computes those
  /// (runtime/aten_matmul.h). Written as the attribute `vtrn.math = "sgemm"`. Other dots (the
  /// lowerings' own, an attention's) keep the executor's kernels.
  bool sgemm = false;
  /// reduce (an add over float32) lowered from torch.sum or torch.mean: each output's elements
  /// summed in the order ATen's cascade sum takes a contiguous row (runtime/aten_sum.h), not in
  /// the executor's own tree. Written as the attribute `vtrn.math = "cascade_sum"`.
  bool cascade_sum = false;
  /// reduce (an add over float32) lowered from softmax or log_softmax over the last dim, or
  /// their backwards: each output's elements summed in the order of ATen's vec::reduce_all
  /// (runtime/aten_sum.h). Written as the attribute `vtrn.math = "vec_sum"`.
  bool vec_sum = false;
  std::string call_target_name;                 ///< custom_call
  std::string backend_config;                   ///< custom_call
  Literal literal;                              ///< constant
  std::vector<std::shared_ptr<Block>> regions;  ///< reduce, scatter, sort bodies
};

/// A function body or a region: typed values, arguments, ops and returned values. The
/// last op of a verified block is not stored; |results| lists what it returns.
struct Block {
  std::vector<TensorType> types;  ///< type of each value number
  std::vector<int> args;          ///< the values that are arguments (0..n-1)
  std::vector<Op> ops;
  std::vector<int> results;  ///< returned values
  /// Per argument of the main function (empty when none is donated): kNotDonated; kAnyResult
  /// (`jax.buffer_donor = true`): its buffer may be reused for a result of its type; or a
  /// result index (`tf.aliasing_output = N`): its buffer may be reused for result N.
  std::vector<int> donation;
  static constexpr int kNotDonated = -1;
  static constexpr int kAnyResult = -2;

  const TensorType& type(int value) const { return types.at(static_cast<std::size_t>(value)); }
  int add_value(TensorType t) {
    types.push_back(std::move(t));
    return static_cast<int>(types.size()) - 1;
  }
};

struct Module {
  std::string name;  ///< the MLIR module symbol without '@' (may be empty)
  Block main;
};

//===----------------------------------------------------------------------===//
// Standard regions
//===----------------------------------------------------------------------===//

/// The combiner a reduce region computes, when it is one of the standard ones.
enum class ReduceKind : std::uint8_t { kAdd, kMul, kMax, kMin, kAnd, kOr, kOther };
std::string_view reduce_kind_name(ReduceKind kind);
/// The binary op a standard combiner applies (kAdd -> OpKind::kAdd, ...); nullopt for kOther.
std::optional<OpKind> reduce_kind_op(ReduceKind kind);
/// The combiner that applies |op|; nullopt when |op| is none of the standard ones.
std::optional<ReduceKind> reduce_kind_of(OpKind op);
/// A block (a, b) -> op(a, b) over scalars of |dtype|.
std::shared_ptr<Block> make_reduce_region(ReduceKind kind, DType dtype);
/// Matches a region (a, b) -> op(a, b) of one binary op; kOther when it is anything else.
ReduceKind match_reduce_region(const Block& region);

/// Scatter update rule: replace (return the update) or add.
/// How a scatter combines an update with the operand element: overwrite it, or apply add,
/// multiply, maximum or minimum (NaN propagating, as stablehlo.maximum/minimum do).
enum class ScatterKind : std::uint8_t { kReplace, kAdd, kMul, kMax, kMin, kOther };
std::shared_ptr<Block> make_scatter_region(ScatterKind kind, DType dtype);
ScatterKind match_scatter_region(const Block& region);

/// A sort comparator comparing operand |key| with direction LT (ascending) or GT (descending).
std::shared_ptr<Block> make_sort_region(const std::vector<DType>& dtypes, int key, bool descending);
/// Matches a comparator of the form `compare LT|GT, arg[2k], arg[2k+1]`; false when it is not.
bool match_sort_region(const Block& region, int* key, bool* descending);

}  // namespace vtrn::hlo
