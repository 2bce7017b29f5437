// Printer: the exact StableHLO text of small modules (pretty form for elementwise ops, generic
// form for the rest), and printed text that parses back to the same module, field by field.
#include "vtrn/hlo/printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/parser.h"

namespace vtrn::hlo {
namespace {

// Structural equality of two blocks: types, arguments, results and every field of every op,
// regions included. Reports the first difference.
::testing::AssertionResult SameBlock(const Block& a, const Block& b, const std::string& where) {
  auto differ = [&](const std::string& what) {
    return ::testing::AssertionFailure() << where << ": " << what << " differ";
  };
  if (a.types != b.types) return differ("value types");
  if (a.args != b.args) return differ("arguments");
  if (a.results != b.results) return differ("results");
  if (a.ops.size() != b.ops.size()) return differ("op counts");
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const Op &x = a.ops[i], &y = b.ops[i];
    const std::string at =
        where + " op " + std::to_string(i) + " (" + std::string(op_name(x.kind)) + ")";
    auto op_differ = [&](const std::string& what) {
      return ::testing::AssertionFailure() << at << ": " << what << " differ";
    };
    if (x.kind != y.kind) return op_differ("kinds");
    if (x.operands != y.operands || x.results != y.results) return op_differ("values");
    if (x.dims != y.dims || x.dimension != y.dimension) return op_differ("dimensions");
    if (x.start_indices != y.start_indices || x.limit_indices != y.limit_indices ||
        x.strides != y.strides)
      return op_differ("slice bounds");
    if (x.edge_padding_low != y.edge_padding_low || x.edge_padding_high != y.edge_padding_high ||
        x.interior_padding != y.interior_padding)
      return op_differ("paddings");
    if (x.comparison != y.comparison || x.compare_type != y.compare_type)
      return op_differ("comparisons");
    if (!(x.dot == y.dot) || !(x.conv == y.conv) || !(x.gather == y.gather) ||
        !(x.scatter == y.scatter))
      return op_differ("dimension numbers");
    if (x.is_stable != y.is_stable || x.indices_are_sorted != y.indices_are_sorted ||
        x.unique_indices != y.unique_indices || x.vml != y.vml || x.sgemm != y.sgemm ||
        x.cascade_sum != y.cascade_sum || x.vec_sum != y.vec_sum || x.sleef != y.sleef)
      return op_differ("flags");
    if (x.rng_algorithm != y.rng_algorithm) return op_differ("rng algorithms");
    if (x.call_target_name != y.call_target_name || x.backend_config != y.backend_config)
      return op_differ("custom call targets");
    if (!(x.literal == y.literal)) return op_differ("literals");
    if (x.regions.size() != y.regions.size()) return op_differ("region counts");
    for (std::size_t r = 0; r < x.regions.size(); ++r) {
      auto same = SameBlock(*x.regions[r], *y.regions[r], at + " region " + std::to_string(r));
      if (!same) return same;
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ReparsesToSameModule(const Module& m) {
  const std::string text = print_module(m);
  const Module back = parse_module(text);
  if (back.name != m.name)
    return ::testing::AssertionFailure()
           << "module name '" << back.name << "' != '" << m.name << "'";
  auto same = SameBlock(m.main, back.main, "main");
  if (!same) return same << "\n" << text;
  return same;
}

TEST(PrinterTest, ExactTextOfPrettyAndGenericOps) {
  Builder b("m");
  Value x = b.param(TensorType(DType::kF32, {2, 3}));
  Value w = b.param(TensorType(DType::kF32, {3, 4}));
  Value y = b.matmul(x, w);
  Value z = b.exp(y);
  const Module m = b.finish({z});
  EXPECT_EQ(print_module(m),
            "module @m {\n"
            "  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>) -> "
            "(tensor<2x4xf32>) {\n"
            "    %0 = \"stablehlo.dot_general\"(%arg0, %arg1) {dot_dimension_numbers = "
            "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} "
            ": (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>\n"
            "    %1 = stablehlo.exponential %0 : tensor<2x4xf32>\n"
            "    return %1 : tensor<2x4xf32>\n"
            "  }\n"
            "}\n");
}

// StableHLO has no fused multiply-add; vtrn writes MLIR's math.fma, in its pretty form when the
// three operands and the result share one type (as math.fma requires).
TEST(PrinterTest, FmaIsWrittenAsMathFma) {
  Builder b("m");
  TensorType t(DType::kF32, {4});
  Value x = b.param(t), y = b.param(t), z = b.param(t);
  const Module m = b.finish({b.fma(x, y, z)});
  EXPECT_EQ(print_module(m),
            "module @m {\n"
            "  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>) "
            "-> (tensor<4xf32>) {\n"
            "    %0 = math.fma %arg0, %arg1, %arg2 : tensor<4xf32>\n"
            "    return %0 : tensor<4xf32>\n"
            "  }\n"
            "}\n");
}

// An op computed as ATen's own kernel computes it carries vtrn's discardable attribute, in
// the pretty form's attribute dictionary.
TEST(PrinterTest, VmlOpsCarryTheVtrnMathAttribute) {
  Builder b("m");
  TensorType t(DType::kF32, {4});
  Value x = b.param(t);
  const Module m = b.finish({b.vml_unary(OpKind::kSqrt, x), b.unary(OpKind::kSqrt, x)});
  EXPECT_EQ(print_module(m),
            "module @m {\n"
            "  func.func @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
            "    %0 = stablehlo.sqrt %arg0 {vtrn.math = \"vml\"} : tensor<4xf32>\n"
            "    %1 = stablehlo.sqrt %arg0 : tensor<4xf32>\n"
            "    return %0, %1 : tensor<4xf32>, tensor<4xf32>\n"
            "  }\n"
            "}\n");
  EXPECT_TRUE(ReparsesToSameModule(m));
  EXPECT_THROW(b.vml_unary(OpKind::kLog1p, x), Error);

  Builder e("e");
  Value ex = e.param(t);
  const Module em = e.finish({e.sleef_exp(ex)});
  EXPECT_NE(print_module(em).find("stablehlo.exponential %arg0 {vtrn.math = \"sleef\"}"),
            std::string::npos)
      << print_module(em);
  EXPECT_TRUE(ReparsesToSameModule(em));

  Builder d("d");
  TensorType mt(DType::kF32, {2, 2});
  Value p = d.param(mt);
  const Module dm = d.finish({d.dot_general(p, p, DotDims{{}, {}, {1}, {0}}, std::nullopt, true)});
  EXPECT_NE(print_module(dm).find("rhs_contracting_dimensions = [0]>, vtrn.math = \"sgemm\"}"),
            std::string::npos)
      << print_module(dm);
  EXPECT_TRUE(ReparsesToSameModule(dm));

  Builder r("r");
  Value rx = r.param(mt);
  const Module rm =
      r.finish({r.reduce(rx, r.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd, true),
                r.reduce(rx, r.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd),
                r.reduce(rx, r.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd, false, true)});
  EXPECT_NE(print_module(rm).find("{dimensions = array<i64: 1>, vtrn.math = \"cascade_sum\"}"),
            std::string::npos)
      << print_module(rm);
  EXPECT_NE(print_module(rm).find("{dimensions = array<i64: 1>, vtrn.math = \"vec_sum\"}"),
            std::string::npos)
      << print_module(rm);
  EXPECT_TRUE(ReparsesToSameModule(rm));
}

TEST(PrinterTest, ExactTextOfRegionsAndAttributes) {
  Builder b;
  Value x = b.param(TensorType(DType::kI32, {4}));
  Value s = b.reduce(x, b.scalar(DType::kI32, 0), {0}, ReduceKind::kMax);
  Value p = b.pad(x, b.scalar(DType::kI32, 7), {1}, {2}, {0});
  const Module m = b.finish({s, p});
  EXPECT_EQ(print_module(m),
            "module {\n"
            "  func.func @main(%arg0: tensor<4xi32>) -> (tensor<i32>, tensor<7xi32>) {\n"
            "    %0 = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> "
            "tensor<i32>\n"
            "    %1 = \"stablehlo.reduce\"(%arg0, %0) ({\n"
            "    ^bb0(%arg1: tensor<i32>, %arg2: tensor<i32>):\n"
            "      %2 = stablehlo.maximum %arg1, %arg2 : tensor<i32>\n"
            "      \"stablehlo.return\"(%2) : (tensor<i32>) -> ()\n"
            "    }) {dimensions = array<i64: 0>} : (tensor<4xi32>, tensor<i32>) -> tensor<i32>\n"
            "    %3 = \"stablehlo.constant\"() {value = dense<7> : tensor<i32>} : () -> "
            "tensor<i32>\n"
            "    %4 = \"stablehlo.pad\"(%arg0, %3) {edge_padding_low = array<i64: 1>, "
            "edge_padding_high = array<i64: 2>, interior_padding = array<i64: 0>} : "
            "(tensor<4xi32>, tensor<i32>) -> tensor<7xi32>\n"
            "    return %1, %4 : tensor<i32>, tensor<7xi32>\n"
            "  }\n"
            "}\n");
}

TEST(PrinterTest, DenseLiteralForms) {
  // A splat, a rank-0 scalar, nested brackets up to 64 elements, hex bytes beyond.
  EXPECT_EQ(print_dense(Literal::splat_of(TensorType(DType::kF32, {3, 2}), 1.5)), "dense<1.5>");
  EXPECT_EQ(print_dense(Literal::scalar(DType::kI64, -3)), "dense<-3>");
  EXPECT_EQ(print_dense(Literal::from_doubles(TensorType(DType::kF32, {2, 2}), {1, 2, 3, 4})),
            "dense<[[1.0, 2.0], [3.0, 4.0]]>");
  EXPECT_EQ(print_dense(Literal::from_doubles(TensorType(DType::kPred, {1}), {1})),
            "dense<[true]>");
  std::vector<double> values(65, 0.0);
  values[0] = 1.0;  // 0x3F800000, little-endian 00 00 80 3F
  const std::string hex = print_dense(Literal::from_doubles(TensorType(DType::kF32, {65}), values));
  EXPECT_EQ(hex.substr(0, 18), "dense<\"0x0000803F0");
  EXPECT_EQ(hex.size(), std::string("dense<\"0x\">").size() + 65 * 4 * 2);
  // Non-finite floats print as their bits, so that they parse back exactly.
  EXPECT_EQ(print_dense(Literal::scalar(DType::kF32, std::numeric_limits<double>::infinity())),
            "dense<0x7F800000>");
}

TEST(PrinterTest, EveryOpKindReparsesToTheSameModule) {
  Builder b("all-ops");  // a name that must be quoted
  Value x = b.param(TensorType(DType::kF32, {2, 3}));
  Value y = b.param(TensorType(DType::kF32, {2, 3}));
  Value i = b.param(TensorType(DType::kI32, {2, 3}));
  Value st = b.param(TensorType(DType::kU64, {2}));
  Value idx = b.param(TensorType(DType::kI32, {2, 1}));
  std::vector<Value> outs;
  for (OpKind k :
       {OpKind::kAbs, OpKind::kCeil, OpKind::kCosine, OpKind::kExp, OpKind::kExpm1, OpKind::kFloor,
        OpKind::kLog, OpKind::kLog1p, OpKind::kLogistic, OpKind::kNegate, OpKind::kRoundEven,
        OpKind::kRsqrt, OpKind::kSign, OpKind::kSine, OpKind::kSqrt, OpKind::kTanh})
    outs.push_back(b.unary(k, x));
  for (OpKind k : {OpKind::kAdd, OpKind::kDivide, OpKind::kMaximum, OpKind::kMinimum,
                   OpKind::kMultiply, OpKind::kPower, OpKind::kRemainder, OpKind::kSubtract})
    outs.push_back(b.binary(k, x, y));
  for (OpKind k : {OpKind::kAnd, OpKind::kOr, OpKind::kXor}) outs.push_back(b.binary(k, i, i));
  outs.push_back(b.unary(OpKind::kNot, i));
  outs.push_back(b.select(b.compare(Comparison::kGE, x, y, CompareType::kTotalOrder), x, y));
  outs.push_back(b.compare(Comparison::kNE, i, i));
  outs.push_back(b.clamp(b.scalar(DType::kF32, -1), x, b.scalar(DType::kF32, 1)));
  outs.push_back(b.fma(x, y, x));
  outs.push_back(b.convert(x, DType::kBF16));
  outs.push_back(
      b.constant(Literal::from_doubles(TensorType(DType::kF64, {3}), {0.1, std::nan(""), -1e300})));
  outs.push_back(b.constant(Literal::from_doubles(TensorType(DType::kU64, {1}), {1.8e19})));
  outs.push_back(b.iota(TensorType(DType::kI64, {3, 2}), 0));
  outs.push_back(b.broadcast_in_dim(x, {4, 2, 3}, {1, 2}));
  outs.push_back(b.reshape(x, {6}));
  outs.push_back(b.transpose(x, {1, 0}));
  outs.push_back(b.slice(x, {1, 0}, {2, 3}, {1, 2}));
  Value one = b.scalar(DType::kI32, 1);
  outs.push_back(b.dynamic_slice(x, {one, one}, {1, 2}));
  outs.push_back(b.dynamic_update_slice(x, b.slice(y, {0, 0}, {1, 2}), {one, one}));
  outs.push_back(b.concatenate({x, y, x}, 1));
  outs.push_back(b.pad(x, b.scalar(DType::kF32, 0), {0, 2}, {1, -1}, {1, 0}));
  outs.push_back(b.reverse(x, {1}));
  outs.push_back(b.reduce(x, b.scalar(DType::kF32, 1), {0, 1}, ReduceKind::kMul));
  outs.push_back(b.dot_general(b.reshape(x, {1, 2, 3}), b.reshape(y, {1, 2, 3}),
                               DotDims{{0}, {0}, {2}, {2}}, DType::kF64));
  ConvAttrs conv;
  conv.window_strides = {2};
  conv.padding_low = {1};
  conv.padding_high = {-1};
  conv.lhs_dilation = {2};
  conv.rhs_dilation = {1};
  conv.dims = ConvDimensionNumbers::channels_first(1);
  conv.feature_group_count = 2;
  outs.push_back(b.convolution(b.reshape(x, {1, 2, 3}), b.reshape(y, {2, 1, 3}), conv));
  outs.push_back(b.gather(x, idx, GatherDims{{1}, {0}, {0}, 1}, {1, 3}, true));
  outs.push_back(b.scatter(x, idx, y, ScatterDims{{1}, {0}, {0}, 1}, ScatterKind::kReplace));
  for (Value v : b.sort({x, i}, 1, 1, false, false)) outs.push_back(v);
  auto [state, bits] = b.rng_bit_generator(st, TensorType(DType::kU32, {2, 2}));
  outs.push_back(state);
  outs.push_back(bits);
  for (Value v : b.custom_call("vtrn.test \"target\"", {x}, {TensorType(DType::kF32, {2, 3})},
                               "{\"key\": \"a\\tb\"}"))
    outs.push_back(v);
  const Module m = b.finish(outs);
  EXPECT_TRUE(ReparsesToSameModule(m));
}

TEST(PrinterTest, ScatterFlagsAndRngAlgorithmSurviveTheText) {
  // The builder leaves these at their defaults; set them on the ops to see each one printed.
  Builder b;
  Value x = b.param(TensorType(DType::kF32, {4}));
  Value idx = b.param(TensorType(DType::kI32, {2, 1}));
  Value upd = b.param(TensorType(DType::kF32, {2}));
  Value st = b.param(TensorType(DType::kU32, {4}));
  Value s = b.scatter(x, idx, upd, ScatterDims{{}, {0}, {0}, 1}, ScatterKind::kAdd);
  auto [ns, bits] = b.rng_bit_generator(st, TensorType(DType::kU32, {8}), RngAlgorithm::kPhilox);
  Module m = b.finish({s, ns, bits});
  for (Op& op : m.main.ops)
    if (op.kind == OpKind::kScatter) op.indices_are_sorted = op.unique_indices = true;
  const std::string text = print_module(m);
  EXPECT_NE(text.find("indices_are_sorted = true"), std::string::npos) << text;
  EXPECT_NE(text.find("unique_indices = true"), std::string::npos) << text;
  EXPECT_NE(text.find("rng_algorithm = #stablehlo<rng_algorithm PHILOX>"), std::string::npos)
      << text;
  EXPECT_TRUE(ReparsesToSameModule(m));
}

}  // namespace
}  // namespace vtrn::hlo
