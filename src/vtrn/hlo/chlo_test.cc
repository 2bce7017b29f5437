// CHLO ops as JAX prints them, decomposed into StableHLO on parse (their values are checked by
// the executor's tests, executor_chlo_test.cc).
#include "vtrn/hlo/chlo.h"

#include <gtest/gtest.h>

#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/printer.h"

namespace vtrn::hlo {
namespace {

std::string parse_error(std::string_view text) {
  try {
    parse_module(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string unary_module(const std::string& op, const std::string& t) {
  return "func.func public @main(%arg0: " + t + ") -> (" + t + ") {\n  %0 = " + op +
         " %arg0 : " + t + " -> " + t + "\n  return %0 : " + t + "\n}\n";
}

TEST(ChloTest, UnaryOpsBecomeStableHloOfTheSameType) {
  for (const char* op : {"chlo.square", "chlo.erf", "chlo.erfc", "chlo.erf_inv", "chlo.tan",
                         "chlo.sinh", "chlo.cosh", "chlo.asinh", "chlo.acosh", "chlo.atanh",
                         "chlo.asin", "chlo.acos", "chlo.atan", "chlo.lgamma", "chlo.digamma"}) {
    for (const char* t : {"tensor<5x6xf32>", "tensor<3xbf16>"}) {
      const Module m = parse_module(unary_module(op, t));
      const std::string printed = print_module(m);
      EXPECT_EQ(printed.find("chlo."), std::string::npos) << op;
      EXPECT_EQ(m.main.type(m.main.results[0]).str(), t) << op;
      EXPECT_FALSE(m.main.ops.empty()) << op;
    }
  }
  // square is one multiply; bf16 erf is computed in f32 between two converts.
  const Module sq = parse_module(unary_module("chlo.square", "tensor<4xf32>"));
  ASSERT_EQ(sq.main.ops.size(), 1u);
  EXPECT_EQ(sq.main.ops[0].kind, OpKind::kMultiply);
  const Module erf = parse_module(unary_module("chlo.erf", "tensor<4xbf16>"));
  EXPECT_EQ(erf.main.ops.front().kind, OpKind::kConvert);
  EXPECT_EQ(erf.main.ops.back().kind, OpKind::kConvert);
}

TEST(ChloTest, StableHloTanIsDecomposedToo) {
  const Module m = parse_module(
      "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %0 = stablehlo.tan %x : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n");
  ASSERT_EQ(m.main.ops.size(), 3u);
  EXPECT_EQ(m.main.ops[2].kind, OpKind::kDivide);
}

TEST(ChloTest, TopKIsASortAndTwoSlices) {
  const std::string text =
      "func.func public @main(%arg0: tensor<5x6xf32>) -> (tensor<5x3xf32>, tensor<5x3xi32>) {\n"
      "  %values, %indices = chlo.top_k(%arg0, k = 3) : tensor<5x6xf32> -> (tensor<5x3xf32>, "
      "tensor<5x3xi32>)\n"
      "  return %values, %indices : tensor<5x3xf32>, tensor<5x3xi32>\n}\n";
  const Module m = parse_module(text);
  std::vector<OpKind> kinds;
  for (const Op& op : m.main.ops) kinds.push_back(op.kind);
  EXPECT_EQ(kinds,
            (std::vector<OpKind>{OpKind::kIota, OpKind::kSort, OpKind::kSlice, OpKind::kSlice}));
  int key = -1;
  bool descending = false;
  ASSERT_TRUE(match_sort_region(*m.main.ops[1].regions[0], &key, &descending));
  EXPECT_EQ(key, 0);
  EXPECT_TRUE(descending);
  EXPECT_TRUE(m.main.ops[1].is_stable);
  // The generic form carries k as a property.
  const std::string generic =
      "func.func @main(%arg0: tensor<4xf32>) -> (tensor<2xf32>, tensor<2xi32>) {\n"
      "  %0:2 = \"chlo.top_k\"(%arg0) <{k = 2 : i64}> : (tensor<4xf32>) -> (tensor<2xf32>, "
      "tensor<2xi32>)\n"
      "  return %0#0, %0#1 : tensor<2xf32>, tensor<2xi32>\n}\n";
  EXPECT_EQ(parse_module(generic).main.type(parse_module(generic).main.results[1]).str(),
            "tensor<2xi32>");
}

TEST(ChloTest, ShardingAnnotationsAreTheValueItself) {
  // jax.lax.with_sharding_constraint as JAX prints it without Shardy.
  const Module m = parse_module(
      "func.func public @main(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
      "  %2 = stablehlo.custom_call @Sharding(%arg0) {backend_config = \"\", mhlo.sharding = "
      "\"{replicated}\"} : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
      "  %3 = stablehlo.negate %2 : tensor<4x4xf32>\n"
      "  return %3 : tensor<4x4xf32>\n}\n");
  ASSERT_EQ(m.main.ops.size(), 1u);
  EXPECT_EQ(m.main.ops[0].kind, OpKind::kNegate);
  EXPECT_EQ(m.main.ops[0].operands[0], m.main.args[0]);
  // Any other custom_call stays a call.
  const Module other = parse_module(
      "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %0 = stablehlo.custom_call @my_kernel(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  return %0 : tensor<2xf32>\n}\n");
  ASSERT_EQ(other.main.ops.size(), 1u);
  EXPECT_EQ(other.main.ops[0].kind, OpKind::kCustomCall);
}

TEST(ChloTest, ShardyMeshesAndHintsAreAcceptedAndIgnored) {
  // jax.jit with in_shardings and with_sharding_constraint on a one-device mesh (Shardy).
  const Module m = parse_module(
      "module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n"
      "  sdy.mesh @mesh = <[\"x\"=1]> {stablehlo.mesh = {axes = [{name = \"x\", size = 1 : "
      "i64}]}}\n"
      "  func.func public @main(%arg0: tensor<4x3xf32> {sdy.sharding = #sdy.sharding<@mesh, "
      "[{\"x\"}, {}]>}) -> (tensor<4x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {\n"
      "    %0 = sdy.sharding_constraint %arg0 <@mesh, [{\"x\"}, {}]> : tensor<4x3xf32>\n"
      "    %1 = \"sdy.sharding_constraint\"(%0) <{sharding = #sdy.sharding<@mesh, [{}, {}]>}> : "
      "(tensor<4x3xf32>) -> tensor<4x3xf32>\n"
      "    %2 = stablehlo.negate %1 : tensor<4x3xf32>\n"
      "    return %2 : tensor<4x3xf32>\n  }\n}\n");
  ASSERT_EQ(m.main.ops.size(), 1u);
  EXPECT_EQ(m.main.ops[0].kind, OpKind::kNegate);
  EXPECT_EQ(m.main.ops[0].operands[0], m.main.args[0]);
}

TEST(ChloTest, ErrorsNameTheOpAndWhatItTakes) {
  EXPECT_NE(
      parse_error(unary_module("chlo.bessel_i1e", "tensor<4xf32>"))
          .find("op 'chlo.bessel_i1e' is not supported by vtrn (the CHLO ops it decomposes: "),
      std::string::npos);
  EXPECT_NE(parse_error(unary_module("chlo.erf", "tensor<4xf64>"))
                .find("chlo.erf: operand has type tensor<4xf64>, expected f32, bf16 or f16"),
            std::string::npos);
  EXPECT_NE(parse_error(unary_module("chlo.tan", "tensor<4xi32>"))
                .find("chlo.tan: operand has type tensor<4xi32>, expected a real floating type"),
            std::string::npos);
  EXPECT_NE(parse_error("func.func @main(%a: tensor<4xf32>) -> (tensor<5xf32>, tensor<5xi32>) {\n"
                        "  %v, %i = chlo.top_k(%a, k = 5) : tensor<4xf32> -> (tensor<5xf32>, "
                        "tensor<5xi32>)\n  return %v, %i : tensor<5xf32>, tensor<5xi32>\n}\n")
                .find("chlo.top_k: k = 5 must be between 0 and the last dimension (4)"),
            std::string::npos);
  EXPECT_NE(parse_error("func.func @main(%a: tensor<4xf32>) -> tensor<3xf32> {\n"
                        "  %0 = chlo.square %a : tensor<4xf32> -> tensor<3xf32>\n"
                        "  return %0 : tensor<3xf32>\n}\n")
                .find("chlo.square: result 0 has type tensor<4xf32>, but the text says "
                      "tensor<3xf32>"),
            std::string::npos);
}

}  // namespace
}  // namespace vtrn::hlo
