// Verifier: each invalid form is rejected with the message that names the op, the operand and
// what was expected; well-formed ops get the result types the StableHLO spec gives them.
#include "vtrn/hlo/verify.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vtrn::hlo {
namespace {

TensorType f32(std::vector<std::int64_t> dims) { return TensorType(DType::kF32, std::move(dims)); }
TensorType i32(std::vector<std::int64_t> dims) { return TensorType(DType::kI32, std::move(dims)); }

// A block written op by op without verification, so that invalid ops can be built.
class RawBlock {
 public:
  int arg(TensorType t) {
    const int v = block_.add_value(std::move(t));
    block_.args.push_back(v);
    return v;
  }
  /// Appends |op| with |operands| and one result value per entry of |results|.
  Op& op(OpKind kind, std::vector<int> operands, std::vector<TensorType> results) {
    Op o;
    o.kind = kind;
    o.operands = std::move(operands);
    for (TensorType& t : results) o.results.push_back(block_.add_value(std::move(t)));
    block_.ops.push_back(std::move(o));
    return block_.ops.back();
  }
  /// Returns the first result of the last op.
  Block& returning_last() {
    block_.results = {block_.ops.back().results.at(0)};
    return block_;
  }
  Block& block() { return block_; }

 private:
  Block block_;
};

// What verify_block says about |block|; empty when it accepts it.
std::string verify_error(const Block& block) {
  try {
    verify_block(block);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The message for one op of |kind| over operands of |in| with declared |out| types; |set| fills
// the op's attributes.
template <typename Set>
std::string op_error(OpKind kind, std::vector<TensorType> in, std::vector<TensorType> out,
                     Set set) {
  RawBlock b;
  std::vector<int> operands;
  for (TensorType& t : in) operands.push_back(b.arg(std::move(t)));
  set(b.op(kind, operands, std::move(out)));
  return verify_error(b.returning_last());
}
std::string op_error(OpKind kind, std::vector<TensorType> in, std::vector<TensorType> out) {
  return op_error(kind, std::move(in), std::move(out), [](Op&) {});
}

std::shared_ptr<Block> scalar_region(OpKind kind, DType dtype) {
  RawBlock r;
  const int a = r.arg(TensorType(dtype, {})), b = r.arg(TensorType(dtype, {}));
  r.op(kind, {a, b}, {TensorType(dtype, {})});
  return std::make_shared<Block>(r.returning_last());
}

TEST(VerifyTest, AcceptsAWellFormedBlock) {
  RawBlock b;
  const int x = b.arg(f32({4}));
  const int y = b.arg(f32({4}));
  const int s = b.op(OpKind::kAdd, {x, y}, {f32({4})}).results[0];
  Op& r = b.op(OpKind::kReduce, {s, b.op(OpKind::kConstant, {}, {f32({})}).results[0]}, {f32({})});
  r.dims = {0};
  r.regions = {scalar_region(OpKind::kAdd, DType::kF32)};
  b.block().ops[1].literal = Literal::scalar(DType::kF32, 0);
  EXPECT_EQ(verify_error(b.returning_last()), "");
}

TEST(VerifyTest, ElementwiseOperandsAndElementTypes) {
  EXPECT_EQ(op_error(OpKind::kAdd, {f32({4}), f32({3})}, {f32({4})}),
            "stablehlo.add: operand 1 has type tensor<3xf32>, expected tensor<4xf32> (the type of "
            "operand 0)");
  EXPECT_EQ(op_error(OpKind::kAdd, {f32({4})}, {f32({4})}),
            "stablehlo.add: expected 2 operand(s), got 1");
  EXPECT_EQ(op_error(OpKind::kExp, {i32({2})}, {i32({2})}),
            "stablehlo.exponential: operand 0 has type tensor<2xi32>, expected floating-point or "
            "complex elements");
  EXPECT_EQ(op_error(OpKind::kNot, {f32({2})}, {f32({2})}),
            "stablehlo.not: operand 0 has type tensor<2xf32>, expected integer or i1 elements");
  EXPECT_EQ(op_error(OpKind::kAnd, {f32({2}), f32({2})}, {f32({2})}),
            "stablehlo.and: operands have type tensor<2xf32>, expected integer or i1 elements");
  const TensorType pred(DType::kPred, {2});
  EXPECT_EQ(op_error(OpKind::kSubtract, {pred, pred}, {pred}),
            "stablehlo.subtract: operands have type tensor<2xi1>, expected numeric elements (not "
            "i1)");
  EXPECT_EQ(op_error(OpKind::kNegate, {pred}, {pred}),
            "stablehlo.negate: operand 0 has type tensor<2xi1>, expected numeric elements (not "
            "i1)");
  EXPECT_EQ(op_error(OpKind::kConvert, {f32({4})}, {i32({3})}),
            "stablehlo.convert: result tensor<3xi32> must have the shape of operand 0 "
            "(tensor<4xf32>)");
  EXPECT_EQ(op_error(OpKind::kSelect, {f32({4}), f32({4}), f32({4})}, {f32({4})}),
            "stablehlo.select: operand 0 (pred) has type tensor<4xf32>, expected tensor<4xi1> or "
            "tensor<i1>");
  EXPECT_EQ(op_error(OpKind::kClamp, {f32({3}), f32({4}), f32({})}, {f32({4})}),
            "stablehlo.clamp: operand 0 has type tensor<3xf32>, expected tensor<4xf32> or a "
            "scalar of its element type");
  EXPECT_EQ(op_error(OpKind::kFma, {f32({4}), f32({4}), f32({3})}, {f32({4})}),
            "math.fma: operand 2 has type tensor<3xf32>, expected tensor<4xf32> (the type of "
            "operand 0)");
  EXPECT_EQ(op_error(OpKind::kFma, {f32({4}), f32({4})}, {f32({4})}),
            "math.fma: expected 3 operand(s), got 2");
}

TEST(VerifyTest, DeclaredResultsMustBeTheInferredOnes) {
  EXPECT_EQ(op_error(OpKind::kAdd, {f32({4}), f32({4})}, {f32({5})}),
            "stablehlo.add: result 0 has type tensor<5xf32>, expected tensor<4xf32>");
  EXPECT_EQ(op_error(OpKind::kAdd, {f32({4}), f32({4})}, {f32({4}), f32({4})}),
            "stablehlo.add: has 2 results, expected 1");
  EXPECT_EQ(op_error(OpKind::kCompare, {f32({2}), f32({2})}, {f32({2})}),
            "stablehlo.compare: result 0 has type tensor<2xf32>, expected tensor<2xi1>");
}

TEST(VerifyTest, ValuesMustBeDefinedBeforeUse) {
  RawBlock b;
  const int x = b.arg(f32({2}));
  b.op(OpKind::kAdd, {x, x + 2}, {f32({2})});  // x + 2: the result of the next op
  b.op(OpKind::kExp, {x}, {f32({2})});
  EXPECT_EQ(verify_error(b.returning_last()),
            "stablehlo.add: operand 1 uses a value that is not defined before it");

  RawBlock c;
  const int y = c.arg(f32({2}));
  c.op(OpKind::kExp, {y}, {f32({2})});
  c.block().results = {7};
  EXPECT_EQ(verify_error(c.block()), "return: a returned value is not defined");
}

TEST(VerifyTest, DataMovementAttributes) {
  EXPECT_EQ(op_error(OpKind::kBroadcastInDim, {f32({3})}, {f32({2, 3})},
                     [](Op& op) {
                       op.dims = {0, 1};
                     }),
            "stablehlo.broadcast_in_dim: broadcast_dimensions [0, 1] has 2 entries, expected the "
            "operand rank 1");
  EXPECT_EQ(
      op_error(OpKind::kBroadcastInDim, {f32({3})}, {f32({2, 4})}, [](Op& op) { op.dims = {1}; }),
      "stablehlo.broadcast_in_dim: operand dimension 0 has size 3, expected 1 or 4 (result "
      "dimension 1 of tensor<2x4xf32>)");
  EXPECT_EQ(op_error(OpKind::kTranspose, {f32({2, 3})}, {f32({3, 2})},
                     [](Op& op) {
                       op.dims = {0, 0};
                     }),
            "stablehlo.transpose: permutation [0, 0] repeats dimension 0");
  EXPECT_EQ(op_error(OpKind::kTranspose, {f32({2, 3})}, {f32({3, 2})},
                     [](Op& op) {
                       op.dims = {0, 2};
                     }),
            "stablehlo.transpose: permutation [0, 2] has dimension 2, expected 0 <= d < 2");
  EXPECT_EQ(op_error(OpKind::kReshape, {f32({6})}, {f32({4})}),
            "stablehlo.reshape: cannot reshape tensor<6xf32> to tensor<4xf32> (element type and "
            "count must match)");
  EXPECT_EQ(op_error(OpKind::kSlice, {f32({4})}, {f32({4})},
                     [](Op& op) {
                       op.start_indices = {1};
                       op.limit_indices = {5};
                       op.strides = {1};
                     }),
            "stablehlo.slice: dimension 0: slice [1:5:1] is invalid for size 4 (need 0 <= start "
            "<= limit <= size, stride >= 1)");
  EXPECT_EQ(op_error(OpKind::kDynamicSlice, {f32({4}), f32({})}, {f32({2})},
                     [](Op& op) { op.dims = {2}; }),
            "stablehlo.dynamic_slice: operand 1 has type tensor<f32>, expected a scalar integer "
            "index");
  EXPECT_EQ(op_error(OpKind::kConcatenate, {f32({2, 2}), f32({3, 3})}, {f32({5, 2})}),
            "stablehlo.concatenate: operand 1 has type tensor<3x3xf32>, expected the type of "
            "operand 0 (tensor<2x2xf32>) except in dimension 0");
  EXPECT_EQ(op_error(OpKind::kPad, {f32({4}), f32({})}, {f32({4})},
                     [](Op& op) {
                       op.edge_padding_low = {0};
                       op.edge_padding_high = {0};
                       op.interior_padding = {-1};
                     }),
            "stablehlo.pad: interior_padding [-1] must not be negative");
  EXPECT_EQ(op_error(OpKind::kPad, {f32({4}), i32({})}, {f32({4})},
                     [](Op& op) {
                       op.edge_padding_low = op.edge_padding_high = op.interior_padding = {0};
                     }),
            "stablehlo.pad: operand 1 (padding value) has type tensor<i32>, expected tensor<f32>");
  EXPECT_EQ(op_error(OpKind::kIota, {}, {f32({4})}, [](Op& op) { op.dimension = 1; }),
            "stablehlo.iota: iota_dimension 1 is out of range for tensor<4xf32>");
  EXPECT_EQ(op_error(OpKind::kConstant, {}, {f32({4})},
                     [](Op& op) {
                       op.literal.type = f32({4});
                       op.literal.data.assign(4, 0);
                     }),
            "stablehlo.constant: literal has 4 bytes, expected 16 for tensor<4xf32>");
}

TEST(VerifyTest, ReductionsAndContractions) {
  EXPECT_EQ(op_error(OpKind::kReduce, {f32({4}), i32({})}, {f32({})},
                     [](Op& op) {
                       op.dims = {0};
                       op.regions = {scalar_region(OpKind::kAdd, DType::kF32)};
                     }),
            "stablehlo.reduce: init value 0 (operand 1) has type tensor<i32>, expected "
            "tensor<f32>");
  EXPECT_EQ(op_error(OpKind::kReduce, {f32({4}), f32({})}, {f32({})},
                     [](Op& op) {
                       op.dims = {0};
                       op.regions = {scalar_region(OpKind::kAdd, DType::kI32)};
                     }),
            "stablehlo.reduce: reducer argument/result 0 must have type tensor<f32>");
  // An invalid op inside a region is reported as itself.
  EXPECT_EQ(op_error(OpKind::kReduce, {f32({4}), f32({})}, {f32({})},
                     [](Op& op) {
                       op.dims = {0};
                       op.regions = {scalar_region(OpKind::kAnd, DType::kF32)};
                     }),
            "stablehlo.and: operands have type tensor<f32>, expected integer or i1 elements");
  EXPECT_EQ(op_error(OpKind::kDotGeneral, {f32({2, 3}), f32({4, 5})}, {f32({2, 5})},
                     [](Op& op) {
                       op.dot = DotDims{{}, {}, {1}, {0}};
                     }),
            "stablehlo.dot_general: contracting dimension 0 has size 3 in lhs tensor<2x3xf32> but "
            "4 in rhs tensor<4x5xf32>");
  EXPECT_EQ(op_error(OpKind::kDotGeneral, {f32({2, 3}), f32({2, 3})}, {f32({2, 2})},
                     [](Op& op) {
                       op.dot = DotDims{{0}, {}, {1}, {1}};
                     }),
            "stablehlo.dot_general: lhs_batching_dimensions [0] and rhs_batching_dimensions [] "
            "differ in length");
  EXPECT_EQ(
      op_error(OpKind::kGather, {f32({4}), f32({2, 1})}, {f32({2})}, [](Op& op) { op.dims = {1}; }),
      "stablehlo.gather: operand 1 (start_indices) has type tensor<2x1xf32>, expected "
      "integer elements");
  EXPECT_EQ(
      op_error(OpKind::kScatter, {f32({4}), i32({2, 1}), TensorType(DType::kF16, {2})}, {f32({4})}),
      "stablehlo.scatter: operand 2 (updates) has element type f16, expected f32 (the "
      "operand's)");
  EXPECT_EQ(op_error(OpKind::kSort, {f32({4})}, {f32({4})}),
            "stablehlo.sort: expected one comparator region");
  EXPECT_EQ(
      op_error(OpKind::kRngBitGenerator, {f32({2})}, {f32({2}), TensorType(DType::kU32, {4})}),
      "stablehlo.rng_bit_generator: operand 0 (state) has type tensor<2xf32>, expected a 1-d "
      "tensor of 32- or 64-bit integers");
  EXPECT_EQ(op_error(OpKind::kCustomCall, {f32({2})}, {f32({2})}),
            "stablehlo.custom_call: call_target_name is empty");
}

TEST(VerifyTest, InfersResultTypesAsTheSpecDoes) {
  // dot_general [b, m, k] x [b, k, n] -> [b, m, n]; batch dimensions first.
  Op dot;
  dot.kind = OpKind::kDotGeneral;
  dot.dot = DotDims{{0}, {0}, {2}, {1}};
  EXPECT_EQ(infer_result_types(dot, {f32({5, 2, 3}), f32({5, 3, 4})}, nullptr),
            std::vector<TensorType>{f32({5, 2, 4})});
  // gather of 3 rows of width 8 from [10, 8] by indices [3, 1]: [3, 8].
  Op gather;
  gather.kind = OpKind::kGather;
  gather.gather = GatherDims{{1}, {0}, {0}, 1};
  gather.dims = {1, 8};
  EXPECT_EQ(infer_result_types(gather, {f32({10, 8}), i32({3, 1})}, nullptr),
            std::vector<TensorType>{f32({3, 8})});
  // pad [4] with low 1, high 2, interior 1: 1 + 4 + 3 + 2 = 10.
  Op pad;
  pad.kind = OpKind::kPad;
  pad.edge_padding_low = {1};
  pad.edge_padding_high = {2};
  pad.interior_padding = {1};
  EXPECT_EQ(infer_result_types(pad, {f32({4}), f32({})}, nullptr),
            std::vector<TensorType>{f32({10})});
  // slice [10] from 1 to 8 by 3: elements 1, 4, 7.
  Op slice;
  slice.kind = OpKind::kSlice;
  slice.start_indices = {1};
  slice.limit_indices = {8};
  slice.strides = {3};
  EXPECT_EQ(infer_result_types(slice, {f32({10})}, nullptr), std::vector<TensorType>{f32({3})});
  // abs of complex64 is float32.
  Op abs;
  abs.kind = OpKind::kAbs;
  EXPECT_EQ(infer_result_types(abs, {TensorType(DType::kC64, {2})}, nullptr),
            std::vector<TensorType>{f32({2})});
}

}  // namespace
}  // namespace vtrn::hlo
