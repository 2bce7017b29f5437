// The buffer assignment: live ranges, sharing of disjoint ones, aliasing through bitcasts,
// results and arguments kept out of the arena, and which results may be written over donated
// arguments. Expected ranges and offsets are worked out by hand from each module's kernels.
#include "vtrn/compiler/buffer_assignment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/printer.h"

namespace vtrn::compiler {
namespace {

// One kernel per op (no fusion, no passes), so kernel i is op i.
Executable compile_unfused(const std::string& text) {
  CompileOptions o;
  o.opt_level = 0;
  o.fusion = false;
  return compile(hlo::parse_module(text), o);
}

// The value an op defines, by the op's index.
int value_of(const Executable& e, int op) { return e.module.main.ops.at(op).results.at(0); }

// The plan's own promise, checked pairwise: intermediates whose live ranges meet do not share
// bytes, and every one fits in the arena.
void expect_no_live_overlap(const Executable& e) {
  const BufferAssignment& p = e.buffers;
  const hlo::Block& b = e.module.main;
  for (std::size_t u = 0; u < b.types.size(); ++u) {
    if (p.offset[u] < 0) continue;
    const std::int64_t ue = p.offset[u] + std::max<std::int64_t>(b.type(u).byte_size(), 1);
    EXPECT_LE(ue, p.arena_bytes);
    EXPECT_EQ(p.offset[u] % BufferAssignment::kAlignment, 0);
    for (std::size_t v = u + 1; v < b.types.size(); ++v) {
      if (p.offset[v] < 0) continue;
      const bool live_together = p.def_kernel[u] <= std::max(p.last_kernel[v], p.def_kernel[v]) &&
                                 p.def_kernel[v] <= std::max(p.last_kernel[u], p.def_kernel[u]);
      if (!live_together) continue;
      const std::int64_t ve = p.offset[v] + std::max<std::int64_t>(b.type(v).byte_size(), 1);
      EXPECT_TRUE(ue <= p.offset[v] || ve <= p.offset[u])
          << "values " << u << " and " << v << " are live together and share bytes";
    }
  }
}

TEST(BufferAssignmentTest, DisjointLiveRangesShareOneBuffer) {
  // A chain: each intermediate is read only by the next op. %0 lives over kernels 0-1, %1 over
  // 1-2, %2 over 2-3: %0 and %2 can share, so two 64-byte slots hold three intermediates.
  Executable e = compile_unfused(R"(
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.exponential %x : tensor<4x4xf32>
  %1 = stablehlo.log %0 : tensor<4x4xf32>
  %2 = stablehlo.tanh %1 : tensor<4x4xf32>
  %3 = stablehlo.sqrt %2 : tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
})");
  const BufferAssignment& p = e.buffers;
  const int v0 = value_of(e, 0), v1 = value_of(e, 1), v2 = value_of(e, 2), v3 = value_of(e, 3);
  EXPECT_EQ(p.def_kernel[v0], 0);
  EXPECT_EQ(p.last_kernel[v0], 1);
  EXPECT_EQ(p.last_kernel[v2], 3);
  EXPECT_EQ(p.intermediate_bytes, 3 * 64);
  EXPECT_EQ(p.arena_bytes, 2 * 64);
  EXPECT_EQ(e.peak_scratch_bytes(), 2 * 64);
  EXPECT_EQ(p.offset[v0], p.offset[v2]);
  EXPECT_NE(p.offset[v0], p.offset[v1]);
  // The argument and the result are the caller's buffers.
  EXPECT_EQ(p.offset[e.module.main.args[0]], -1);
  EXPECT_EQ(p.offset[v3], -1);
  expect_no_live_overlap(e);
}

TEST(BufferAssignmentTest, ABitcastKeepsItsOperandsBufferLive) {
  // %1 reshapes %0 (no copy) and is read by the last op, so %0's buffer lives to kernel 5 and
  // none of %2..%4 may take it, though %0 itself is never read after kernel 1.
  Executable e = compile_unfused(R"(
func.func @main(%x: tensor<4x4xf32>) -> tensor<16xf32> {
  %0 = stablehlo.exponential %x : tensor<4x4xf32>
  %1 = stablehlo.reshape %0 : (tensor<4x4xf32>) -> tensor<16xf32>
  %2 = stablehlo.log %x : tensor<4x4xf32>
  %3 = stablehlo.tanh %2 : tensor<4x4xf32>
  %4 = stablehlo.reshape %3 : (tensor<4x4xf32>) -> tensor<16xf32>
  %5 = stablehlo.add %1, %4 : tensor<16xf32>
  return %5 : tensor<16xf32>
})");
  const BufferAssignment& p = e.buffers;
  const int v0 = value_of(e, 0), v1 = value_of(e, 1), v2 = value_of(e, 2), v3 = value_of(e, 3);
  EXPECT_EQ(e.kernels[1].kind, KernelKind::kBitcast);
  EXPECT_EQ(p.last_kernel[v0], 5);
  EXPECT_EQ(p.offset[v1], -1);  // the bitcast is %0's buffer
  EXPECT_NE(p.offset[v2], p.offset[v0]);
  EXPECT_NE(p.offset[v3], p.offset[v0]);
  // %2 (kernels 2-3) and %3 (3-5) meet at kernel 3: three slots.
  EXPECT_EQ(p.arena_bytes, 3 * 64);
  expect_no_live_overlap(e);
}

TEST(BufferAssignmentTest, AReturnedBitcastKeepsItsOperandToTheEnd) {
  Executable e = compile_unfused(R"(
func.func @main(%x: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>) {
  %0 = stablehlo.exponential %x : tensor<4x4xf32>
  %1 = stablehlo.reshape %0 : (tensor<4x4xf32>) -> tensor<16xf32>
  %2 = stablehlo.log %x : tensor<4x4xf32>
  %3 = stablehlo.tanh %2 : tensor<4x4xf32>
  return %1, %3 : tensor<16xf32>, tensor<4x4xf32>
})");
  const BufferAssignment& p = e.buffers;
  const int v0 = value_of(e, 0), v2 = value_of(e, 2);
  EXPECT_EQ(p.last_kernel[v0], static_cast<int>(e.kernels.size()));
  EXPECT_NE(p.offset[v0], -1);  // an intermediate: the result is copied out of it at the end
  EXPECT_NE(p.offset[v2], p.offset[v0]);
  EXPECT_EQ(p.result_writer[0], -1);  // a bitcast writes nothing
  EXPECT_EQ(p.result_writer[1], 3);
  expect_no_live_overlap(e);
}

TEST(BufferAssignmentTest, AKernelsInputsAndOutputsNeverShare) {
  // Fused kernels: exp+log fuse into one loop reading %x; the dot reads %1 and writes %2,
  // live together at the dot; the transpose reads %2. Whatever the fusion, the pairwise
  // check holds.
  hlo::Module m = hlo::parse_module(R"(
func.func @main(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.exponential %x : tensor<8x8xf32>
  %1 = stablehlo.log %0 : tensor<8x8xf32>
  %2 = stablehlo.dot_general %1, %1, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %4 = stablehlo.dot_general %3, %1, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %4 : tensor<8x8xf32>
})");
  for (bool fusion : {false, true}) {
    CompileOptions o;
    o.opt_level = 0;
    o.fusion = fusion;
    Executable e = compile(m, o);
    expect_no_live_overlap(e);
    // %1 is read by both dots, so it is live from its kernel to the last one.
    const int v1 = value_of(e, 1);
    EXPECT_EQ(e.buffers.last_kernel[v1], static_cast<int>(e.kernels.size()) - 1);
  }
}

TEST(BufferAssignmentTest, AFusedLoopsExtraOutputIsPlannedFromItsKernel) {
  // exp, log and tanh fuse into one loop; the dot after it reads exp's value too, so the loop
  // stores that value as a second output (multi-output fusion). It is an intermediate of the
  // plan: defined by the loop's kernel, live until the dot, never sharing bytes with tanh's.
  Executable e = compile(hlo::parse_module(R"(
func.func @main(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.exponential %x : tensor<8x8xf32>
  %1 = stablehlo.log %0 : tensor<8x8xf32>
  %2 = stablehlo.tanh %1 : tensor<8x8xf32>
  %3 = stablehlo.dot_general %2, %0, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %3 : tensor<8x8xf32>
})"));
  ASSERT_EQ(e.kernels.size(), 2u);
  ASSERT_EQ(e.kernels[0].kind, KernelKind::kFused);
  ASSERT_EQ(e.kernels[0].ops, (std::vector<int>{0, 1, 2}));
  const BufferAssignment& p = e.buffers;
  const int v0 = value_of(e, 0), v2 = value_of(e, 2);
  EXPECT_GE(p.offset[v0], 0);
  EXPECT_EQ(p.def_kernel[v0], 0);
  EXPECT_EQ(p.last_kernel[v0], 1);
  EXPECT_NE(p.offset[v0], p.offset[v2]);
  EXPECT_EQ(p.intermediate_bytes, 2 * 256);
  expect_no_live_overlap(e);
}

TEST(BufferAssignmentTest, TheLoopsOfARowChainNeverShareBytes) {
  // Softmax: max, exp(x - max), sum, exp / sum, four fused loops the executor may run as one
  // row chain. The max (read by the second loop) and the sum (computed by the third) have
  // disjoint kernel ranges, but interleaved by rows they are live together.
  hlo::Builder b("softmax");
  const hlo::TensorType t(hlo::DType::kF32, {8, 64});
  hlo::Value x = b.param(t);
  hlo::Value m = b.reduce(x, b.scalar(hlo::DType::kF32, -INFINITY), {1}, hlo::ReduceKind::kMax);
  hlo::Value e = b.exp(b.sub(x, b.broadcast_in_dim(m, {8, 64}, {0})));
  hlo::Value s = b.reduce(e, b.scalar(hlo::DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);
  hlo::Value y = b.div(e, b.broadcast_in_dim(s, {8, 64}, {0}));
  const Executable exe = compile(b.finish({y}));
  std::vector<int> sums;  // the two reduces' results, in order: the max, then the sum
  for (const hlo::Op& op : exe.module.main.ops)
    if (op.kind == hlo::OpKind::kReduce) sums.push_back(op.results[0]);
  ASSERT_EQ(sums.size(), 2u);
  const BufferAssignment& p = exe.buffers;
  EXPECT_EQ(p.def_kernel[sums[0]], p.def_kernel[sums[1]]);
  EXPECT_GE(p.offset[sums[0]], 0);
  EXPECT_NE(p.offset[sums[0]], p.offset[sums[1]]);
  expect_no_live_overlap(exe);
}

TEST(BufferAssignmentTest, TheLoadedExecutableHasTheSamePlan) {
  Executable e = compile_unfused(R"(
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.exponential %x : tensor<4x4xf32>
  %1 = stablehlo.log %0 : tensor<4x4xf32>
  %2 = stablehlo.tanh %1 : tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
})");
  const Executable loaded = deserialize(serialize(e));
  EXPECT_EQ(loaded.buffers.offset, e.buffers.offset);
  EXPECT_EQ(loaded.buffers.arena_bytes, e.buffers.arena_bytes);
}

TEST(BufferAssignmentTest, DonatedArgumentsAreWrittenOverOnlyWhenNothingReadsThemLater) {
  // %p -= 0.5 * %g (an optimizer step) may be computed in %p's buffer: the loop reads element
  // i of %p before writing element i. %m is donated too, but the dot reads it after the
  // kernel computing result 1, so result 1 gets its own buffer.
  hlo::Module m = hlo::parse_module(R"(
func.func @main(%p: tensor<4x4xf32> {jax.buffer_donor = true}, %g: tensor<4x4xf32>,
                %m: tensor<4x4xf32> {tf.aliasing_output = 1 : i32})
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %h = stablehlo.constant dense<0.5> : tensor<4x4xf32>
  %0 = stablehlo.multiply %h, %g : tensor<4x4xf32>
  %1 = stablehlo.subtract %p, %0 : tensor<4x4xf32>
  %2 = stablehlo.add %m, %g : tensor<4x4xf32>
  %3 = stablehlo.dot_general %m, %g, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %1, %2, %3 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
})");
  ASSERT_EQ(m.main.donation, (std::vector<int>{hlo::Block::kAnyResult, -1, 1}));
  for (bool fusion : {false, true}) {
    CompileOptions o;
    o.fusion = fusion;
    const Executable e = compile(m, o);
    const BufferAssignment& p = e.buffers;
    EXPECT_TRUE(p.can_write_over(0, 0));
    EXPECT_FALSE(p.can_write_over(1, 2));  // the dot reads %m later
    // Nothing reads %p after the subtraction, so the dot could write over it too; it reads %g
    // itself, and a dot does not write element by element.
    EXPECT_TRUE(p.can_write_over(2, 0));
    EXPECT_FALSE(p.can_write_over(2, 1));
    EXPECT_EQ(p.donor_of_result, (std::vector<int>{0, -1, -1}));
    // The donation survives the executable's round trip.
    EXPECT_EQ(deserialize(serialize(e)).buffers.donor_of_result, p.donor_of_result);
  }
}

TEST(BufferAssignmentTest, AStridedReadOfADonatedArgumentIsNotWrittenOver) {
  // broadcast_in_dim with dims [1, 0] transposes %p: the loop reads element (j, i) while it
  // writes (i, j), so writing over %p would clobber what later chunks read.
  hlo::Module m = hlo::parse_module(R"(
func.func @main(%p: tensor<64x64xf32> {jax.buffer_donor = true}, %g: tensor<64x64xf32>)
    -> tensor<64x64xf32> {
  %t = stablehlo.broadcast_in_dim %p, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %0 = stablehlo.add %t, %g : tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
})");
  const Executable e = compile(m);
  EXPECT_FALSE(e.buffers.can_write_over(0, 0));
  EXPECT_TRUE(e.buffers.can_write_over(0, 1));  // %g is read element by element
  EXPECT_EQ(e.buffers.donor_of_result, (std::vector<int>{-1}));
}

TEST(BufferAssignmentTest, AReturnedArgumentIsNotWrittenOver) {
  hlo::Module m = hlo::parse_module(R"(
func.func @main(%p: tensor<4xf32> {jax.buffer_donor = true}) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.negate %p : tensor<4xf32>
  return %0, %p : tensor<4xf32>, tensor<4xf32>
})");
  const Executable e = compile(m);
  EXPECT_FALSE(e.buffers.can_write_over(0, 0));
  EXPECT_EQ(e.buffers.donor_of_result, (std::vector<int>{-1, -1}));
}

TEST(BufferAssignmentTest, DonationAttributesPrintAndParseBack) {
  const char* text = R"(
func.func @main(%a: tensor<2xf32> {jax.buffer_donor = true}, %b: tensor<2xf32>,
                %c: tensor<2xf32> {tf.aliasing_output = 0 : i32}) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %b : tensor<2xf32>
  %1 = stablehlo.add %0, %c : tensor<2xf32>
  return %1 : tensor<2xf32>
})";
  const hlo::Module m = hlo::parse_module(text);
  EXPECT_EQ(m.main.donation, (std::vector<int>{hlo::Block::kAnyResult, -1, 0}));
  EXPECT_EQ(hlo::parse_module(hlo::print_module(m)).main.donation, m.main.donation);
  // The generic form carries them in arg_attrs.
  const hlo::Module g = hlo::parse_module(R"(
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{}, {jax.buffer_donor = true}], function_type = (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>, sym_name = "main"}> ({
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    %0 = "stablehlo.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) : () -> ()
}) : () -> ()
)");
  EXPECT_EQ(g.main.donation, (std::vector<int>{-1, hlo::Block::kAnyResult}));
}

TEST(BufferAssignmentTest, ADonationToAResultOfAnotherTypeIsAnError) {
  try {
    hlo::parse_module(R"(
func.func @main(%a: tensor<2xf32> {tf.aliasing_output = 0 : i32}) -> tensor<2xf64> {
  %0 = stablehlo.convert %a : (tensor<2xf32>) -> tensor<2xf64>
  return %0 : tensor<2xf64>
})");
    FAIL() << "a donation across types parsed";
  } catch (const hlo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor<2xf32>"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("its own type"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtrn::compiler
