// Builder shape inference (hand-computed shapes) and verifier errors (op, operand, expectation).
#include "vtrn/hlo/builder.h"

#include <gtest/gtest.h>

#include "vtrn/hlo/verify.h"

namespace vtrn::hlo {
namespace {

using Dims = std::vector<std::int64_t>;

TensorType f32(Dims d) { return TensorType(DType::kF32, std::move(d)); }

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BuilderTest, ElementwiseAndCompare) {
  Builder b;
  Value x = b.param(f32({2, 3}));
  Value y = b.param(f32({2, 3}));
  Value s = b.add(x, b.exp(y));
  Value c = b.compare(Comparison::kGT, s, x);
  EXPECT_EQ(b.type(s), f32({2, 3}));
  EXPECT_EQ(b.type(c), TensorType(DType::kPred, {2, 3}));
  EXPECT_EQ(b.type(b.select(c, s, x)), f32({2, 3}));
  EXPECT_EQ(b.type(b.convert(s, DType::kBF16)), TensorType(DType::kBF16, {2, 3}));
  Module m = b.finish({s});
  EXPECT_NO_THROW(verify_module(m));
  EXPECT_EQ(m.main.ops.size(), 5u);  // exp, add, compare, select, convert
}

TEST(BuilderTest, DataMovementShapes) {
  Builder b;
  Value x = b.param(f32({2, 3, 4}));
  EXPECT_EQ(b.type(b.transpose(x, {2, 0, 1})).dims, (Dims{4, 2, 3}));
  EXPECT_EQ(b.type(b.reshape(x, {6, 4})).dims, (Dims{6, 4}));
  EXPECT_EQ(b.type(b.slice(x, {0, 1, 0}, {2, 3, 4}, {1, 1, 3})).dims, (Dims{2, 2, 2}));
  EXPECT_EQ(b.type(b.concatenate({x, x}, 1)).dims, (Dims{2, 6, 4}));
  Value pv = b.scalar(DType::kF32, 0);
  // 1 + 2 + 3 + (3-1)*2 = 10 in dim 1.
  EXPECT_EQ(b.type(b.pad(x, pv, {0, 1, 0}, {0, 2, -1}, {0, 2, 0})).dims, (Dims{2, 10, 3}));
  EXPECT_EQ(b.type(b.reduce(x, pv, {0, 2}, ReduceKind::kAdd)).dims, (Dims{3}));
  EXPECT_EQ(b.type(b.broadcast_in_dim(x, {5, 2, 3, 4}, {1, 2, 3})).dims, (Dims{5, 2, 3, 4}));
  Value i = b.scalar(DType::kI32, 1);
  EXPECT_EQ(b.type(b.dynamic_slice(x, {i, i, i}, {1, 2, 2})).dims, (Dims{1, 2, 2}));
  EXPECT_EQ(b.type(b.iota(TensorType(DType::kI32, {3, 4}), 1)).dims, (Dims{3, 4}));
}

TEST(BuilderTest, DotGeneralShape) {
  Builder b;
  Value l = b.param(f32({8, 16, 32}));  // batch, m, k
  Value r = b.param(f32({8, 32, 4}));   // batch, k, n
  DotDims d{{0}, {0}, {2}, {1}};
  EXPECT_EQ(b.type(b.dot_general(l, r, d)).dims, (Dims{8, 16, 4}));
  EXPECT_EQ(b.type(b.dot_general(l, r, d, DType::kF64)).dtype, DType::kF64);
}

TEST(BuilderTest, GatherShape) {
  // Embedding lookup: operand [5, 3], indices [2, 1] -> [2, 3].
  Builder b;
  Value x = b.param(f32({5, 3}));
  Value idx = b.param(TensorType(DType::kI32, {2, 1}));
  GatherDims g;
  g.offset_dims = {1};
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 1;
  EXPECT_EQ(b.type(b.gather(x, idx, g, {1, 3})).dims, (Dims{2, 3}));
}

TEST(BuilderTest, VerifierErrorsNameOpOperandAndExpectation) {
  Builder b;
  Value x = b.param(f32({4}));
  Value y = b.param(f32({3}));
  const std::string e = error_of([&] { b.add(x, y); });
  EXPECT_NE(e.find("stablehlo.add"), std::string::npos) << e;
  EXPECT_NE(e.find("operand 1 has type tensor<3xf32>, expected tensor<4xf32>"), std::string::npos)
      << e;

  const std::string e2 = error_of([&] { b.reshape(x, {3}); });
  EXPECT_NE(e2.find("stablehlo.reshape: cannot reshape tensor<4xf32> to tensor<3xf32>"),
            std::string::npos)
      << e2;

  const std::string e3 = error_of([&] { b.transpose(x, {1}); });
  EXPECT_NE(e3.find("permutation [1]"), std::string::npos) << e3;

  Value m = b.param(f32({2, 3}));
  const std::string e4 = error_of([&] { b.matmul(m, m); });
  EXPECT_NE(e4.find("stablehlo.dot_general: contracting dimension 0 has size 3 in lhs"),
            std::string::npos)
      << e4;

  const std::string e5 =
      error_of([&] { b.unary(OpKind::kExp, b.param(TensorType(DType::kI32, {2}))); });
  EXPECT_NE(e5.find("expected floating-point"), std::string::npos) << e5;
}

TEST(BuilderTest, FailedOpLeavesBuilderUsable) {
  Builder b;
  Value x = b.param(f32({4}));
  EXPECT_THROW(b.slice(x, {0}, {5}), Error);
  Value y = b.neg(x);
  Module m = b.finish({y});
  EXPECT_EQ(m.main.ops.size(), 1u);
  EXPECT_NO_THROW(verify_module(m));
}

}  // namespace
}  // namespace vtrn::hlo
