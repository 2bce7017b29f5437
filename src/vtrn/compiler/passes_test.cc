// Constant folding, CSE, DCE and broadcast copies on small modules with hand-checked outcomes.
#include "vtrn/compiler/passes.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/verify.h"

namespace vtrn::compiler {
namespace {

using hlo::Builder;
using hlo::DType;
using hlo::OpKind;
using hlo::TensorType;
using hlo::Value;

TEST(PassesTest, FoldsScalarArithmeticAndBroadcast) {
  Builder b;
  Value x = b.param(TensorType(DType::kF32, {4}));
  Value c = b.add(b.scalar(DType::kF32, 1.5), b.scalar(DType::kF32, 2.25));  // 3.75
  Value bc = b.broadcast_in_dim(c, {4}, {});
  hlo::Module m = b.finish({b.mul(x, bc)});
  EXPECT_EQ(fold_constants(m), 2);
  eliminate_dead_code(m);
  hlo::verify_module(m);
  ASSERT_EQ(m.main.ops.size(), 2u);
  EXPECT_EQ(m.main.ops[0].kind, OpKind::kConstant);
  EXPECT_TRUE(m.main.ops[0].literal.splat);
  EXPECT_EQ(m.main.ops[0].literal.get_double(0), 3.75);
  EXPECT_EQ(m.main.ops[1].kind, OpKind::kMultiply);
}

TEST(PassesTest, FoldsIntegersWithWrapAndBf16WithRounding) {
  Builder b;
  Value i = b.add(b.scalar(DType::kI8, 100), b.scalar(DType::kI8, 100));  // 200 wraps to -56
  Value h = b.add(b.scalar(DType::kBF16, 1),
                  b.scalar(DType::kBF16, 1.0 / 256));  // 1 + 2^-8: tie, rounds to 1
  hlo::Module m = b.finish({i, h});
  fold_constants(m);
  eliminate_dead_code(m);
  ASSERT_EQ(m.main.ops.size(), 2u);
  EXPECT_EQ(m.main.ops[0].literal.get_int(0), -56);
  EXPECT_EQ(m.main.ops[1].literal.get_double(0), 1.0);
}

TEST(PassesTest, CseMergesIdenticalOpsButNotRng) {
  Builder b;
  Value x = b.param(TensorType(DType::kF32, {4}));
  Value s = b.param(TensorType(DType::kU64, {2}));
  Value a1 = b.exp(x), a2 = b.exp(x);
  auto r1 = b.rng_bit_generator(s, TensorType(DType::kU32, {4}));
  auto r2 = b.rng_bit_generator(s, TensorType(DType::kU32, {4}));
  hlo::Module m = b.finish({b.add(a1, a2), r1.second, r2.second});
  EXPECT_EQ(eliminate_common_subexpressions(m), 1);
  hlo::verify_module(m);
  const hlo::Op& add = m.main.ops.back();
  EXPECT_EQ(add.operands[0], add.operands[1]);
}

TEST(PassesTest, TransposeFoldsIntoDotOnlyWhenFreeDimsKeepTheirOrder) {
  Builder b;
  Value x = b.param(TensorType(DType::kF32, {6, 3}));
  Value y = b.param(TensorType(DType::kF32, {6, 4}));
  Value z = b.param(TensorType(DType::kF32, {2, 3, 6}));
  Value w = b.matmul(b.transpose(x, {1, 0}), y);  // lhs [3, 6], contracting 1
  // [3, 2, 6] -> free dims 0 and 1 would swap: not folded.
  Value v = b.dot_general(b.transpose(z, {1, 0, 2}), y, hlo::DotDims{{}, {}, {2}, {0}});
  hlo::Module m = b.finish({w, v});
  EXPECT_EQ(fold_transposes_into_dots(m), 1);
  eliminate_dead_code(m);
  hlo::verify_module(m);
  int transposes = 0;
  for (const hlo::Op& op : m.main.ops) transposes += op.kind == OpKind::kTranspose;
  EXPECT_EQ(transposes, 1);
  const hlo::Op& dot = m.main.ops[0];
  ASSERT_EQ(dot.kind, OpKind::kDotGeneral);
  EXPECT_EQ(dot.operands[0], m.main.args[0]);  // x itself
  EXPECT_EQ(dot.dot.lhs_contracting, (std::vector<std::int64_t>{0}));
  EXPECT_EQ(dot.dot.rhs_contracting, (std::vector<std::int64_t>{0}));
}

TEST(PassesTest, DceRemovesUnusedOps) {
  Builder b;
  Value x = b.param(TensorType(DType::kF32, {4}));
  b.exp(x);
  b.neg(x);
  Value kept = b.unary(OpKind::kAbs, x);
  hlo::Module m = b.finish({kept});
  EXPECT_EQ(eliminate_dead_code(m), 2);
  ASSERT_EQ(m.main.ops.size(), 1u);
  EXPECT_EQ(m.main.ops[0].kind, OpKind::kAbs);
  hlo::verify_module(m);
}

TEST(PassesTest, EachLoopReaderOfABroadcastGetsItsOwnCopy) {
  Builder b;
  TensorType t(DType::kF32, {4, 8});
  Value x = b.param(t), w = b.param(TensorType(DType::kF32, {}));
  Value wb = b.broadcast_in_dim(w, t.dims, {});
  Value m = b.mul(wb, wb);  // one reader, reading it twice
  Value a = b.add(x, wb);   // a second reader
  Value s = b.reduce(wb, b.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);  // a third
  hlo::Module mod = b.finish({m, a, s, wb});                                     // and returned
  EXPECT_EQ(duplicate_shared_broadcasts(mod), 2);
  hlo::verify_module(mod);
  const hlo::Block& blk = mod.main;
  std::vector<int> broadcasts;
  for (const hlo::Op& op : blk.ops)
    if (op.kind == OpKind::kBroadcastInDim) broadcasts.push_back(op.results[0]);
  ASSERT_EQ(broadcasts.size(), 3u);
  for (const hlo::Op& op : blk.ops) {
    if (op.kind == OpKind::kMultiply) {  // both operands the same copy: the original
      EXPECT_EQ(op.operands[0], broadcasts[0]);
      EXPECT_EQ(op.operands[1], broadcasts[0]);
    }
    if (op.kind == OpKind::kAdd && op.operands[0] == blk.args[0])
      EXPECT_EQ(op.operands[1], broadcasts[1]);
    if (op.kind == OpKind::kReduce) EXPECT_EQ(op.operands[0], broadcasts[2]);
  }
  EXPECT_EQ(blk.results[3], broadcasts[0]);  // the returned value is the original
}

// Two lerps by one scalar weight (a _foreach_lerp_ over two tensors of one shape): the test of
// the weight, computed from its broadcast and a splat constant alone, is one value after CSE.
// Each select gets its own copy of it, down to the broadcast (the constant stays shared), so the
// two updates compile to two loops, not one over both tensors.
TEST(PassesTest, AValueComputedFromBroadcastsAloneIsCopiedForEachLoop) {
  const hlo::Module parsed = hlo::parse_module(R"(
func.func @main(%x: tensor<64xf32>, %y: tensor<64xf32>, %e: tensor<64xf32>, %f: tensor<64xf32>,
                %w: tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %wb = stablehlo.broadcast_in_dim %w, dims = [] : (tensor<f32>) -> tensor<64xf32>
  %half = stablehlo.constant dense<0.5> : tensor<64xf32>
  %abs = stablehlo.abs %wb : tensor<64xf32>
  %small = stablehlo.compare LT, %abs, %half : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xi1>
  %dx = stablehlo.subtract %e, %x : tensor<64xf32>
  %dy = stablehlo.subtract %f, %y : tensor<64xf32>
  %rx = stablehlo.select %small, %x, %dx : tensor<64xi1>, tensor<64xf32>
  %ry = stablehlo.select %small, %y, %dy : tensor<64xi1>, tensor<64xf32>
  return %rx, %ry : tensor<64xf32>, tensor<64xf32>
})");
  hlo::Module mod = parsed;
  EXPECT_EQ(duplicate_shared_broadcasts(mod), 3);  // the compare, its abs and the broadcast
  hlo::verify_module(mod);
  std::vector<int> selects, compares, constants;
  for (const hlo::Op& op : mod.main.ops) {
    if (op.kind == OpKind::kSelect) selects.push_back(op.operands[0]);
    if (op.kind == OpKind::kCompare) compares.push_back(op.operands[1]);
    constants.push_back(op.kind == OpKind::kConstant);
  }
  ASSERT_EQ(selects.size(), 2u);
  EXPECT_NE(selects[0], selects[1]);
  ASSERT_EQ(compares.size(), 2u);
  EXPECT_EQ(compares[0], compares[1]);  // the one constant
  EXPECT_EQ(std::count(constants.begin(), constants.end(), 1), 1);
  int loops = 0;
  for (const Kernel& k : compile(parsed).kernels) loops += k.kind == KernelKind::kFused;
  EXPECT_EQ(loops, 2);
}

// log_softmax: x - max read by the exponential's sum and by the result. The result's loop gets
// its own subtract and broadcast, so the module compiles to the max, the exp-sum, the log and
// the result, with nothing written between the last two loops but the rows' sums.
TEST(PassesTest, ADifferenceReadByTwoLoopsIsComputedInEach) {
  const hlo::Module parsed = hlo::parse_module(R"(
func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<8x64xf32>, tensor<f32>) -> tensor<8xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<8xf32>) -> tensor<8x64xf32>
  %shifted = stablehlo.subtract %x, %mb : tensor<8x64xf32>
  %e = stablehlo.exponential %shifted : tensor<8x64xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<8x64xf32>, tensor<f32>) -> tensor<8xf32>
  %l = stablehlo.log %s : tensor<8xf32>
  %lb = stablehlo.broadcast_in_dim %l, dims = [0] : (tensor<8xf32>) -> tensor<8x64xf32>
  %y = stablehlo.subtract %shifted, %lb : tensor<8x64xf32>
  return %y : tensor<8x64xf32>
})");
  hlo::Module mod = parsed;
  EXPECT_EQ(recompute_shared_differences(mod), 2);  // the subtract and its broadcast
  hlo::verify_module(mod);
  int subtracts = 0, broadcasts = 0;
  for (const hlo::Op& op : mod.main.ops) {
    subtracts += op.kind == OpKind::kSubtract;
    broadcasts += op.kind == OpKind::kBroadcastInDim;
  }
  EXPECT_EQ(subtracts, 3);   // x - max twice, and the result's
  EXPECT_EQ(broadcasts, 3);  // max's twice, the log's
  const Executable exe = compile(parsed);
  int loops = 0;
  for (const Kernel& k : exe.kernels) loops += k.kind == KernelKind::kFused;
  EXPECT_EQ(loops, 4);  // max, exp-sum, log, result: no loop writing x - max
  // A difference read by three loops, or returned, stays one value.
  hlo::Module returned = parsed;
  returned.main.results.push_back(returned.main.ops[4].results[0]);
  EXPECT_EQ(recompute_shared_differences(returned), 0);
}

TEST(PassesTest, AWiderBroadcastStaysShared) {
  Builder b;
  TensorType t(DType::kF32, {4, 8});
  Value x = b.param(t), row = b.param(TensorType(DType::kF32, {4}));
  Value rb = b.broadcast_in_dim(row, t.dims, {0});
  hlo::Module mod = b.finish({b.add(x, rb), b.mul(x, rb)});
  EXPECT_EQ(duplicate_shared_broadcasts(mod), 0);
  int broadcasts = 0;
  for (const hlo::Op& op : mod.main.ops) broadcasts += op.kind == OpKind::kBroadcastInDim;
  EXPECT_EQ(broadcasts, 1);
}

}  // namespace
}  // namespace vtrn::compiler
