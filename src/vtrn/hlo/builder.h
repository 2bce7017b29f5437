// Builds a verified function op by op:
//
//   Builder b;
//   Value x = b.param(TensorType(DType::kF32, {4}));
//   Value y = b.add(x, b.exp(x));
//   Module m = b.finish({y});
//
// Every op is verified as it is added; a bad op throws hlo::Error and leaves the builder as it
// was before the call.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vtrn/hlo/ir.h"

namespace vtrn::hlo {

/// A value of the function under construction.
struct Value {
  int id = -1;
};

class Builder {
 public:
  explicit Builder(std::string module_name = "");

  Value param(TensorType type);
  const TensorType& type(Value v) const { return block_.type(v.id); }
  /// The op that defined |v|, or nullptr for a parameter.
  const Op* defining_op(Value v) const;

  // Elementwise.
  Value unary(OpKind kind, Value x);
  /// A unary op computed as ATen's own kernel for it computes float32 (Op::vml).
  Value vml_unary(OpKind kind, Value x);
  /// exp computed with SLEEF on every element, as inside ATen's softmax (Op::sleef).
  Value sleef_exp(Value x);
  Value binary(OpKind kind, Value a, Value b);
  Value add(Value a, Value b) { return binary(OpKind::kAdd, a, b); }
  Value sub(Value a, Value b) { return binary(OpKind::kSubtract, a, b); }
  Value mul(Value a, Value b) { return binary(OpKind::kMultiply, a, b); }
  Value div(Value a, Value b) { return binary(OpKind::kDivide, a, b); }
  Value max(Value a, Value b) { return binary(OpKind::kMaximum, a, b); }
  Value min(Value a, Value b) { return binary(OpKind::kMinimum, a, b); }
  Value exp(Value x) { return unary(OpKind::kExp, x); }
  Value neg(Value x) { return unary(OpKind::kNegate, x); }
  Value compare(Comparison dir, Value a, Value b, CompareType type = CompareType::kNone);
  Value select(Value pred, Value on_true, Value on_false);
  Value clamp(Value lo, Value x, Value hi);
  /// a * b + c, rounded once (math.fma).
  Value fma(Value a, Value b, Value c);
  Value convert(Value x, DType dtype);

  // Data movement.
  Value constant(Literal literal);
  Value scalar(DType dtype, double value) { return constant(Literal::scalar(dtype, value)); }
  Value iota(TensorType type, std::int64_t dimension);
  Value broadcast_in_dim(Value x, std::vector<std::int64_t> shape,
                         std::vector<std::int64_t> broadcast_dims);
  /// Broadcasts |x| (same rank, size-1 or equal dims) or a scalar to |shape|.
  Value broadcast_to(Value x, std::vector<std::int64_t> shape);
  Value reshape(Value x, std::vector<std::int64_t> shape);
  Value transpose(Value x, std::vector<std::int64_t> permutation);
  Value slice(Value x, std::vector<std::int64_t> start, std::vector<std::int64_t> limit,
              std::vector<std::int64_t> strides = {});
  Value dynamic_slice(Value x, std::vector<Value> start, std::vector<std::int64_t> sizes);
  Value dynamic_update_slice(Value x, Value update, std::vector<Value> start);
  Value concatenate(std::vector<Value> xs, std::int64_t dimension);
  Value pad(Value x, Value padding_value, std::vector<std::int64_t> low,
            std::vector<std::int64_t> high, std::vector<std::int64_t> interior);
  Value reverse(Value x, std::vector<std::int64_t> dims);

  // Reductions and contractions.
  /// |cascade_sum|: the add of torch.sum or torch.mean over float32 (Op::cascade_sum);
  /// |vec_sum|: the add of a softmax over its last dim (Op::vec_sum).
  Value reduce(Value x, Value init, std::vector<std::int64_t> dims, ReduceKind kind,
               bool cascade_sum = false, bool vec_sum = false);
  /// |sgemm|: the dot of torch.mm or torch.bmm (Op::sgemm).
  Value dot_general(Value lhs, Value rhs, DotDims dims,
                    std::optional<DType> result_dtype = std::nullopt, bool sgemm = false);
  /// [.., m, k] x [k, n] style matmul of rank-2 operands.
  Value matmul(Value lhs, Value rhs);
  /// stablehlo.convolution of |lhs| (the input) with the kernel |rhs|.
  Value convolution(Value lhs, Value rhs, ConvAttrs attrs);
  Value gather(Value x, Value indices, GatherDims dims, std::vector<std::int64_t> slice_sizes,
               bool indices_are_sorted = false);
  Value scatter(Value x, Value indices, Value updates, ScatterDims dims, ScatterKind kind);
  /// Sorts |xs| along |dimension| by operand |key|; returns one value per operand.
  std::vector<Value> sort(std::vector<Value> xs, std::int64_t dimension, int key, bool descending,
                          bool stable = true);
  /// Returns {new_state, output}.
  std::pair<Value, Value> rng_bit_generator(Value state, TensorType output,
                                            RngAlgorithm algorithm = RngAlgorithm::kDefault);
  std::vector<Value> custom_call(std::string target, std::vector<Value> operands,
                                 std::vector<TensorType> results, std::string backend_config = "");

  /// Adds a fully formed op (operands set, results empty): infers/checks |declared| result types.
  std::vector<Value> add_op(Op op, const std::vector<TensorType>* declared = nullptr);

  /// The module returning |results|. The builder is empty afterwards.
  Module finish(std::vector<Value> results);

 private:
  Value add_one(Op op, const std::vector<TensorType>* declared = nullptr) {
    return add_op(std::move(op), declared)[0];
  }
  std::string name_;
  Block block_;
};

}  // namespace vtrn::hlo
