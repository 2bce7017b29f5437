// Parser: round trips, text as jax exports it (pretty and generic), and malformed input.
#include "vtrn/hlo/parser.h"

#include <gtest/gtest.h>

#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/printer.h"
#include "vtrn/hlo/verify.h"

namespace vtrn::hlo {
namespace {

using Dims = std::vector<std::int64_t>;

std::string parse_error(std::string_view text) {
  try {
    parse_module(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_round_trip(const Module& m) {
  const std::string a = print_module(m);
  Module back = parse_module(a);
  const std::string b = print_module(back);
  EXPECT_EQ(a, b);
  Module again = parse_module(b);
  EXPECT_EQ(print_module(again), b);
}

TEST(ParserTest, RoundTripsEveryOpKind) {
  Builder b("all_ops");
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
  Value c = b.compare(Comparison::kLE, x, y, CompareType::kFloat);
  outs.push_back(b.select(c, x, y));
  outs.push_back(b.clamp(b.scalar(DType::kF32, -1), x, b.scalar(DType::kF32, 1)));
  outs.push_back(b.fma(x, y, x));
  outs.push_back(b.convert(x, DType::kBF16));
  outs.push_back(
      b.constant(Literal::from_doubles(TensorType(DType::kF32, {2, 2}), {1.5, -2, 0.1, 1e30})));
  outs.push_back(b.constant(Literal::from_doubles(TensorType(DType::kBF16, {3}), {1.5, -2, 0.1})));
  outs.push_back(b.constant(Literal::from_doubles(TensorType(DType::kPred, {2}), {1, 0})));
  outs.push_back(b.constant(Literal::splat_of(TensorType(DType::kI64, {4}), -7)));
  outs.push_back(b.iota(TensorType(DType::kI32, {4, 2}), 1));
  outs.push_back(b.broadcast_in_dim(x, {4, 2, 3}, {1, 2}));
  outs.push_back(b.reshape(x, {3, 2}));
  outs.push_back(b.transpose(x, {1, 0}));
  outs.push_back(b.slice(x, {0, 1}, {2, 3}, {1, 2}));
  Value one = b.scalar(DType::kI32, 1);
  outs.push_back(b.dynamic_slice(x, {one, one}, {1, 2}));
  outs.push_back(b.dynamic_update_slice(x, b.slice(y, {0, 0}, {1, 1}), {one, one}));
  outs.push_back(b.concatenate({x, y}, 0));
  outs.push_back(b.pad(x, b.scalar(DType::kF32, 0), {1, 0}, {0, 2}, {1, 0}));
  outs.push_back(b.reverse(x, {0, 1}));
  outs.push_back(b.reduce(x, b.scalar(DType::kF32, 0), {1}, ReduceKind::kAdd));
  outs.push_back(b.reduce(i, b.scalar(DType::kI32, 0), {0}, ReduceKind::kMax));
  outs.push_back(b.dot_general(x, y, DotDims{{}, {}, {1}, {1}}));
  GatherDims g{{1}, {0}, {0}, 1};
  outs.push_back(b.gather(x, idx, g, {1, 3}));
  ScatterDims sd{{1}, {0}, {0}, 1};
  outs.push_back(b.scatter(x, idx, b.slice(y, {0, 0}, {2, 3}), sd, ScatterKind::kAdd));
  outs.push_back(b.scatter(x, idx, b.slice(y, {0, 0}, {2, 3}), sd, ScatterKind::kReplace));
  for (Value v : b.sort({x, y}, 1, 0, true)) outs.push_back(v);
  auto [ns, bits] = b.rng_bit_generator(st, TensorType(DType::kU32, {2, 2}));
  outs.push_back(ns);
  outs.push_back(bits);
  outs.push_back(
      b.custom_call("my_kernel", {x}, {TensorType(DType::kF32, {2, 3})}, "{\"a\": 1}")[0]);
  Module m = b.finish(outs);
  ASSERT_NO_THROW(verify_module(m));
  expect_round_trip(m);
  Module back = parse_module(print_module(m));
  EXPECT_EQ(back.name, "all_ops");
  ASSERT_EQ(back.main.ops.size(), m.main.ops.size());
  for (std::size_t k = 0; k < m.main.ops.size(); ++k)
    EXPECT_EQ(back.main.ops[k].kind, m.main.ops[k].kind) << k;
}

TEST(ParserTest, LiteralsRoundTripExactly) {
  Builder b;
  const std::vector<double> vals = {0.1,   -3.4028234663852886e38, 1e-45,
                                    65504, 0.333333343267,         -0.0};
  Value f = b.constant(Literal::from_doubles(TensorType(DType::kF32, {6}), vals));
  Value h = b.constant(Literal::from_doubles(TensorType(DType::kF16, {6}), vals));
  Value d = b.constant(Literal::from_doubles(TensorType(DType::kF64, {6}), vals));
  Value big = b.constant(
      Literal::from_doubles(TensorType(DType::kF32, {100}), std::vector<double>(100, 0.25)));
  Literal nan = Literal::scalar(DType::kF32, NAN);
  Value n = b.constant(nan);
  Module m = b.finish({f, h, d, big, n});
  Module back = parse_module(print_module(m));
  for (std::size_t k = 0; k < m.main.ops.size(); ++k)
    EXPECT_EQ(back.main.ops[k].literal.data, m.main.ops[k].literal.data) << k;
  expect_round_trip(m);
}

// The text of jax.jit(f).lower(x, w).as_text() for f = relu(x @ w) with a helper function,
// as jax 0.4.3x prints it (pretty form, attributes vtrn skips).
constexpr const char* kJaxPretty = R"(#loc1 = loc("x")
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = "default", mhlo.sharding = "{replicated}"} loc("x"), %arg1: tensor<3x4xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x4xf32> {jax.result_info = "", mhlo.layout_mode = "default"}, tensor<2xf32> {jax.result_info = "[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc(#loc1)
    %1 = call @relu(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %3 = stablehlo.iota dim = 0 : tensor<2xi32>
    %4 = stablehlo.convert %3 : (tensor<2xi32>) -> tensor<2xf32>
    %5 = stablehlo.compare  GT, %2, %4,  FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %6 = stablehlo.select %5, %2, %4 : tensor<2xi1>, tensor<2xf32>
    %7 = stablehlo.slice %1 [0:2, 1:4:2] : (tensor<2x4xf32>) -> tensor<2x2xf32>
    %8 = stablehlo.transpose %7, dims = [1, 0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %9 = stablehlo.reshape %8 : (tensor<2x2xf32>) -> tensor<4xf32>
    %10 = stablehlo.concatenate %9, %9, dim = 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %11 = stablehlo.dynamic_slice %10, %c, sizes = [2] : (tensor<8xf32>, tensor<i32>) -> tensor<2xf32>
    %12 = stablehlo.add %6, %11 : tensor<2xf32>
    %13 = stablehlo.reduce(%1 init: %cst) across dimensions = [0] : (tensor<2x4xf32>, tensor<f32>) -> tensor<4xf32>
     reducer(%arg2: tensor<f32>, %arg3: tensor<f32>)  {
      %16 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %16 : tensor<f32>
    }
    %14 = stablehlo.pad %13, %cst, low = [1], high = [0], interior = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<5xf32>
    %15 = stablehlo.reverse %14, dims = [0] : tensor<5xf32>
    return %1, %12 : tensor<2x4xf32>, tensor<2xf32>
  }
  func.func private @relu(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x4xf32>
    return %1 : tensor<2x4xf32>
  }
}
#loc2 = loc("y")
)";

// A pretty-form reduce keeps the attributes after its dimensions: vtrn.math marks ATen's sum.
TEST(ParserTest, PrettyReduceReadsItsAttributes) {
  const Module m = parse_module(R"(func.func @main(%a: tensor<2x4xf32>) -> tensor<2xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.add across dimensions = [1] {vtrn.math = "cascade_sum"} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %1 = stablehlo.reduce(%a init: %c) applies stablehlo.add across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %2 = stablehlo.reduce(%a init: %c) applies stablehlo.add across dimensions = [1] {vtrn.math = "vec_sum"} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %3 = stablehlo.add %0, %1 : tensor<2xf32>
  %4 = stablehlo.add %3, %2 : tensor<2xf32>
  return %4 : tensor<2xf32>
})");
  std::vector<bool> cascade, vec;
  for (const Op& op : m.main.ops)
    if (op.kind == OpKind::kReduce) {
      cascade.push_back(op.cascade_sum);
      vec.push_back(op.vec_sum);
    }
  EXPECT_EQ(cascade, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(vec, (std::vector<bool>{false, false, true}));
}

TEST(ParserTest, ReadsJaxPrettyText) {
  Module m = parse_module(kJaxPretty);
  EXPECT_EQ(m.name, "jit_f");
  ASSERT_EQ(m.main.args.size(), 2u);
  ASSERT_EQ(m.main.results.size(), 2u);
  EXPECT_EQ(m.main.type(m.main.results[0]), TensorType(DType::kF32, {2, 4}));
  // The call was inlined: the helper's broadcast and maximum appear in main.
  int maxes = 0;
  for (const Op& op : m.main.ops) maxes += op.kind == OpKind::kMaximum;
  EXPECT_EQ(maxes, 1);
  const Op& dot = m.main.ops[0];
  EXPECT_EQ(dot.kind, OpKind::kDotGeneral);
  EXPECT_EQ(dot.dot.lhs_contracting, (Dims{1}));
  EXPECT_EQ(dot.dot.rhs_contracting, (Dims{0}));
  bool saw_slice = false;
  for (const Op& op : m.main.ops)
    if (op.kind == OpKind::kSlice) {
      saw_slice = true;
      EXPECT_EQ(op.strides, (Dims{1, 2}));
    }
  EXPECT_TRUE(saw_slice);
  expect_round_trip(m);
}

// The same kind of module in MLIR's generic form (print_generic_op_form=True).
constexpr const char* kJaxGeneric = R"("builtin.module"() <{sym_name = "jit_g"}> ({
  "func.func"() <{arg_attrs = [{mhlo.layout_mode = "default"}], function_type = (tensor<5x3xf32>, tensor<2x1xi32>) -> (tensor<2x3xf32>, tensor<3xf32>), res_attrs = [{jax.result_info = ""}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<5x3xf32>, %arg1: tensor<2x1xi32>):
    %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 3>}> : (tensor<5x3xf32>, tensor<2x1xi32>) -> tensor<2x3xf32>
    %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %2 = "stablehlo.reduce"(%0, %1) <{dimensions = array<i64: 0>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %5 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%5) : (tensor<f32>) -> ()
    }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
    %3 = "stablehlo.sort"(%2) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %6 = "stablehlo.compare"(%arg4, %arg5) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
      "stablehlo.return"(%6) : (tensor<i1>) -> ()
    }) : (tensor<3xf32>) -> tensor<3xf32>
    %4 = "stablehlo.dot_general"(%0, %0) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
    %7 = "stablehlo.scatter"(%arg0, %arg1, %0) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
      "stablehlo.return"(%arg7) : (tensor<f32>) -> ()
    }) : (tensor<5x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>) -> tensor<5x3xf32>
    "func.return"(%0, %3) : (tensor<2x3xf32>, tensor<3xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32} : () -> ()
)";

// math.fma in both MLIR forms, as vtrn prints it and as MLIR's generic printer writes it.
TEST(ParserTest, ReadsMathFmaInBothForms) {
  for (const char* text :
       {R"(func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.fma %a, %b, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
        R"(func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "math.fma"(%a, %b, %a) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
})"}) {
    Module m = parse_module(text);
    ASSERT_EQ(m.main.ops.size(), 1u) << text;
    EXPECT_EQ(m.main.ops[0].kind, OpKind::kFma);
    EXPECT_EQ(m.main.ops[0].operands, (std::vector<int>{0, 1, 0}));
  }
}

TEST(ParserTest, ReadsGenericForm) {
  Module m = parse_module(kJaxGeneric);
  EXPECT_EQ(m.name, "jit_g");
  ASSERT_EQ(m.main.ops.size(), 6u);
  EXPECT_EQ(m.main.ops[0].kind, OpKind::kGather);
  EXPECT_EQ(m.main.ops[0].dims, (Dims{1, 3}));
  EXPECT_EQ(match_reduce_region(*m.main.ops[2].regions[0]), ReduceKind::kAdd);
  int key = -1;
  bool desc = true;
  EXPECT_TRUE(match_sort_region(*m.main.ops[3].regions[0], &key, &desc));
  EXPECT_EQ(key, 0);
  EXPECT_FALSE(desc);
  EXPECT_EQ(m.main.type(m.main.ops[4].results[0]).dims, (Dims{2, 2}));
  EXPECT_EQ(match_scatter_region(*m.main.ops[5].regions[0]), ScatterKind::kReplace);
  expect_round_trip(m);
}

// jax.jit(f).lower(x, y).as_text(debug_info=True): every op, argument and function carries a
// location, `loc(...)` after the closing braces, and `#loc = loc(...)` aliases before and after
// the module (the shape jax 0.10 prints; vtrn skips all of them).
constexpr const char* kJaxDebugInfo = R"mlir(#loc1 = loc("x")
#loc2 = loc("y")
module @jit_f attributes {jax.uses_shape_polymorphism = false, mhlo.frontend_attributes = {xla.sdy.meshes = "{}"}, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3xf32> loc("y")) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %0 = call @_scale(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(#loc8)
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32> loc(#loc)
    %1 = stablehlo.reduce(%0 init: %cst) across dimensions = [0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
     reducer(%arg2: tensor<f32> loc("jit(f)/reduce_sum"(#loc5)), %arg3: tensor<f32> loc("jit(f)/reduce_sum"(#loc5)))  {
      %3 = stablehlo.add %arg2, %arg3 : tensor<f32> loc(#loc9)
      stablehlo.return %3 : tensor<f32> loc(#loc9)
    } loc(#loc9)
    %2 = stablehlo.add %1, %arg1 : tensor<3xf32> loc(#loc10)
    return %2 : tensor<3xf32> loc(#loc)
  } loc(#loc)
  func.func private @_scale(%arg0: tensor<2x3xf32> loc("jit(f)/jit(_scale)"(#loc5))) -> tensor<2x3xf32> {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32> loc(#loc)
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32> loc(#loc11)
    %1 = stablehlo.multiply %arg0, %0 : tensor<2x3xf32> loc(#loc11)
    return %1 : tensor<2x3xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("/tmp/f.py":7:11 to :23)
#loc4 = loc("/tmp/f.py":11:0)
#loc5 = loc("f"(#loc3))
#loc6 = loc(callsite(#loc5 at #loc4))
#loc7 = loc(fused[#loc1, #loc2])
#loc8 = loc("jit(f)/jit(_scale)"(#loc6))
#loc9 = loc("jit(f)/reduce_sum"(#loc6))
#loc10 = loc("jit(f)/add"(#loc6))
#loc11 = loc("jit(f)/jit(_scale)/mul"(#loc6))
)mlir";

// The same module in generic form with locations
// (lower().compiler_ir().operation.get_asm(print_generic_op_form=True, enable_debug_info=True)):
// the call is `"func.call"(...) <{callee = @_scale}>`.
constexpr const char* kJaxGenericDebugInfo = R"mlir(#loc1 = loc("x")
#loc2 = loc("y")
"builtin.module"() <{sym_name = "jit_f"}> ({
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>, res_attrs = [{jax.result_info = "result"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3xf32> loc("y")):
    %0 = "func.call"(%arg0) <{callee = @_scale}> : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(#loc8)
    %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32> loc(#loc)
    %2 = "stablehlo.reduce"(%0, %1) <{dimensions = array<i64: 0>}> ({
    ^bb0(%arg2: tensor<f32> loc("jit(f)/reduce_sum"(#loc5)), %arg3: tensor<f32> loc("jit(f)/reduce_sum"(#loc5))):
      %4 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(#loc9)
      "stablehlo.return"(%4) : (tensor<f32>) -> () loc(#loc9)
    }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32> loc(#loc9)
    %3 = "stablehlo.add"(%2, %arg1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc(#loc10)
    "func.return"(%3) : (tensor<3xf32>) -> () loc(#loc)
  }) : () -> () loc(#loc)
  "func.func"() <{function_type = (tensor<2x3xf32>) -> tensor<2x3xf32>, sym_name = "_scale", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<2x3xf32> loc("jit(f)/jit(_scale)"(#loc5))):
    %0 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32> loc(#loc)
    %1 = "stablehlo.broadcast_in_dim"(%0) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2x3xf32> loc(#loc11)
    %2 = "stablehlo.multiply"(%arg0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc(#loc11)
    "func.return"(%2) : (tensor<2x3xf32>) -> () loc(#loc)
  }) : () -> () loc(#loc)
}) {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} : () -> () loc(#loc)
#loc = loc(unknown)
#loc3 = loc("/tmp/f.py":7:11 to :23)
#loc4 = loc("/tmp/f.py":11:0)
#loc5 = loc("f"(#loc3))
#loc6 = loc(callsite(#loc5 at #loc4))
#loc7 = loc(fused[#loc1, #loc2])
#loc8 = loc("jit(f)/jit(_scale)"(#loc6))
#loc9 = loc("jit(f)/reduce_sum"(#loc6))
#loc10 = loc("jit(f)/add"(#loc6))
#loc11 = loc("jit(f)/jit(_scale)/mul"(#loc6))
)mlir";

TEST(ParserTest, ReadsJaxTextWithDebugInfoInBothForms) {
  for (int generic = 0; generic < 2; ++generic) {
    SCOPED_TRACE(generic ? "generic form" : "pretty form");
    Module m = parse_module(generic ? kJaxGenericDebugInfo : kJaxDebugInfo);
    EXPECT_EQ(m.name, "jit_f");
    ASSERT_EQ(m.main.args.size(), 2u);
    ASSERT_EQ(m.main.results.size(), 1u);
    EXPECT_EQ(m.main.type(m.main.results[0]), TensorType(DType::kF32, {3}));
    // @_scale was inlined: constant, broadcast, multiply, then main's constant, reduce, add.
    std::vector<OpKind> kinds;
    for (const Op& op : m.main.ops) kinds.push_back(op.kind);
    EXPECT_EQ(kinds,
              (std::vector<OpKind>{OpKind::kConstant, OpKind::kBroadcastInDim, OpKind::kMultiply,
                                   OpKind::kConstant, OpKind::kReduce, OpKind::kAdd}));
    EXPECT_EQ(match_reduce_region(*m.main.ops[4].regions[0]), ReduceKind::kAdd);
    expect_round_trip(m);
  }
  // Both forms describe the same module.
  EXPECT_EQ(print_module(parse_module(kJaxDebugInfo)),
            print_module(parse_module(kJaxGenericDebugInfo)));
}

TEST(ParserTest, GenericCallWithoutCalleeIsAClearError) {
  const char* text = R"("builtin.module"() ({
  "func.func"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<2xf32>):
    %0 = "func.call"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) : () -> ()
}) : () -> ()
)";
  EXPECT_NE(parse_error(text).find("func.call without a callee"), std::string::npos)
      << parse_error(text);
}

TEST(ParserTest, OldStyleDenseAttributes) {
  const char* text = R"(module {
  func.func @main(%arg0: tensor<4x6xf32>) -> tensor<2x3xf32> {
    %0 = "stablehlo.slice"(%arg0) {limit_indices = dense<[4, 6]> : tensor<2xi64>, start_indices = dense<[0, 0]> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} : (tensor<4x6xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
})";
  Module m = parse_module(text);
  EXPECT_EQ(m.main.ops[0].strides, (Dims{2, 2}));
}

struct BadCase {
  const char* name;
  const char* text;
  const char* expect;  // substring of the error
};

constexpr const char* kGood = R"(module {
  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
})";

TEST(ParserTest, MalformedInputGivesClearErrors) {
  const BadCase cases[] = {
      {"empty", "", "no function found"},
      {"unknown op", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.while %a : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "op 'stablehlo.while' is not supported by vtrn"},
      {"chlo op", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = chlo.bessel_i1e %a : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "op 'chlo.bessel_i1e' is not supported by vtrn"},
      {"stablehlo has no fma", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.fma %a, %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "op 'stablehlo.fma' is not supported by vtrn"},
      {"another dialect", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.exp %a : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "op 'math.exp' is not supported by vtrn (only stablehlo ops, math.fma and func.call)"},
      {"vml on another op", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.abs %a {vtrn.math = "vml"} : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "stablehlo.abs: vtrn.math is an attribute of exponential, log, sqrt, sine, cosine and "
       "tanh only"},
      {"sgemm on another op", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.exponential %a {vtrn.math = "sgemm"} : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "stablehlo.exponential: vtrn.math must be \"vml\" or \"sleef\""},
      {"cascade_sum on a max", R"(func.func @main(%a: tensor<4xf32>) -> tensor<f32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.maximum across dimensions = [0] {vtrn.math = "cascade_sum"} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
})",
       "stablehlo.reduce: vtrn.math = \"cascade_sum\" is an attribute of a reduce adding one "
       "float32 operand only"},
      {"vec_sum on an integer sum", R"(func.func @main(%a: tensor<4xi32>) -> tensor<i32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.add across dimensions = [0] {vtrn.math = "vec_sum"} : (tensor<4xi32>, tensor<i32>) -> tensor<i32>
  return %0 : tensor<i32>
})",
       "stablehlo.reduce: vtrn.math = \"vec_sum\" is an attribute of a reduce adding one "
       "float32 operand only"},
      {"sgemm on a reduce", R"(func.func @main(%a: tensor<4xf32>) -> tensor<f32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.add across dimensions = [0] {vtrn.math = "sgemm"} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
})",
       "stablehlo.reduce: vtrn.math must be \"cascade_sum\" or \"vec_sum\""},
      {"another vtrn.math", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.exponential %a {vtrn.math = "svml"} : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "stablehlo.exponential: vtrn.math must be \"vml\" or \"sleef\""},
      {"sleef on a log", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.log %a {vtrn.math = "sleef"} : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "stablehlo.log: vtrn.math must be \"vml\""},
      {"sleef on a float64 exp", R"(func.func @main(%a: tensor<4xf64>) -> tensor<4xf64> {
  %0 = stablehlo.exponential %a {vtrn.math = "sleef"} : tensor<4xf64>
  return %0 : tensor<4xf64>
})",
       "stablehlo.exponential: vtrn.math = \"sleef\" is an attribute of a float32 exponential "
       "only"},
      {"integer fma", R"(func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = math.fma %a, %a, %a : tensor<4xi32>
  return %0 : tensor<4xi32>
})",
       "math.fma: operands have type tensor<4xi32>, expected floating-point elements"},
      {"shape mismatch", R"(func.func @main(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "stablehlo.add: operand 1 has type tensor<3xf32>, expected tensor<4xf32>"},
      {"wrong declared type", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xi32>
  return %0 : tensor<4xf32>
})",
       "operand 0 (%a) has type tensor<4xf32>, but the op's type says tensor<4xi32>"},
      {"wrong result type", R"(func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
})",
       "result 0 has type tensor<2x3xf32>, expected tensor<3x2xf32>"},
      {"undefined value", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %zz : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
       "use of undefined value %zz"},
      {"bad element type", R"(func.func @main(%a: tensor<4xf8E4M3FN>) -> tensor<4xf32> {
})",
       "element type 'f8E4M3FN' is not supported"},
      {"dynamic shape", R"(func.func @main(%a: tensor<?xf32>) -> tensor<4xf32> {
})",
       "dynamic dimensions"},
      {"missing return", R"(func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %a : tensor<4xf32>
})",
       "function body ends without 'return'"},
      {"return type", R"(func.func @main(%a: tensor<4xf32>) -> tensor<3xf32> {
  return %a : tensor<4xf32>
})",
       "but its signature says tensor<3xf32>"},
      {"dense count", R"(func.func @main() -> tensor<3xf32> {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<3xf32>
  return %0 : tensor<3xf32>
})",
       "dense literal has 2 elements, expected 3"},
      {"bad reducer", R"(func.func @main(%a: tensor<4xf32>, %c: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.divide across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
})",
       "combiner 'stablehlo.divide' is not supported"},
      {"trailing junk", "func.func @main() -> () {\n  return\n}\n garbage",
       "expected 'func.func', found 'garbage'"},
  };
  for (const BadCase& c : cases) {
    const std::string e = parse_error(c.text);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.name << ":\n" << e;
    EXPECT_NE(e.find("line "), std::string::npos) << c.name << ":\n" << e;
  }
}

TEST(ParserTest, ErrorPointsAtLineAndColumn) {
  try {
    parse_module(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = stablehlo.cbrt %a : "
        "tensor<4xf32>\n  return %0 : tensor<4xf32>\n}");
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 8);
    EXPECT_NE(std::string(e.what()).find("stablehlo.cbrt"), std::string::npos);
  }
}

TEST(ParserTest, EveryTruncationFailsCleanly) {
  const std::string good = print_module(parse_module(kJaxPretty));
  ASSERT_NO_THROW(parse_module(good));
  for (std::size_t n = 0; n + 1 < good.size(); n += 3) {
    try {
      parse_module(std::string_view(good).substr(0, n));
      ADD_FAILURE() << "prefix of " << n << " chars parsed";
    } catch (const ParseError&) {
    }
  }
  for (std::size_t n = 0; n + 1 < std::string(kGood).size(); ++n)
    EXPECT_THROW(parse_module(std::string_view(kGood).substr(0, n)), ParseError);
}

TEST(ParserTest, DeepNestingIsRejectedNotCrashing) {
  std::string text =
      "func.func @main() -> () attributes {a = " + std::string(100000, '[') + "} {\n return\n}";
  EXPECT_THROW(parse_module(text), ParseError);
}

TEST(ParserTest, ElementCountOverflowIsRejectedAtTheLimit) {
  auto module_with = [](const std::string& type) {
    return "func.func @main(%a: " + type + ") -> " + type + " {\n  return %a : " + type + "\n}";
  };
  // 2^40 x 2^24 is 2^64, which wraps int64 to 0; 2^32 x 2^32 x 2^32 wraps the same way. Each
  // dimension alone is within the limit, so only the product can catch them.
  for (const char* type :
       {"tensor<1099511627776x16777216xf32>", "tensor<4294967296x4294967296x4294967296xf32>",
        "tensor<1099511627776x2xf32>", "tensor<2x1099511627776xf32>"}) {
    const std::string e = parse_error(module_with(type));
    EXPECT_NE(e.find("more than 2^40"), std::string::npos) << type << ":\n" << e;
  }
  EXPECT_NE(parse_error(module_with("tensor<1099511627777xf32>")).find("dimension too large"),
            std::string::npos);
  // Exactly 2^40 elements, and a zero-size tensor with a 2^40 dimension, are accepted.
  EXPECT_NO_THROW(parse_module(module_with("tensor<1048576x1048576xi8>")));
  EXPECT_NO_THROW(parse_module(module_with("tensor<0x1099511627776xf32>")));
}

}  // namespace
}  // namespace vtrn::hlo
