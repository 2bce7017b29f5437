// The executor's buffers: intermediates in one arena at the planned offsets (a module whose
// buffers would be overwritten while still needed if liveness ignored bitcasts), results
// written over donated inputs in place, and outputs that overlap inputs the plan does not allow
// to be written over. References are computed here by hand; inputs are small integers, so
// every result is exact in float32.
#include <gtest/gtest.h>

#include <vector>

#include "vtrn/hlo/parser.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

constexpr int kN = 8;

std::vector<double> small_ints(int n, int seed) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = (i * 7 + seed * 3) % 3;
  return v;
}

// (x @ x)^T @ x, the [n, n] product by hand.
std::vector<double> ref_d(const std::vector<double>& x) {
  std::vector<double> b(kN * kN, 0), d(kN * kN, 0);
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      for (int k = 0; k < kN; ++k) b[i * kN + j] += x[i * kN + k] * x[k * kN + j];
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      for (int k = 0; k < kN; ++k) d[i * kN + j] += b[k * kN + i] * x[k * kN + j];
  return d;
}

TEST(ExecutorBuffersTest, AnIntermediateReadThroughABitcastIsNotOverwritten) {
  // %a is read only through %r, at the very end; the arena reuses the dead %b's slot for %d.
  // Were %a's buffer freed after its bitcast, %b, %c or %d would take it and %f would read
  // their bytes.
  const hlo::Module m = hlo::parse_module(R"(
func.func @main(%x: tensor<8x8xf32>) -> tensor<64xf32> {
  %a = stablehlo.transpose %x, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = stablehlo.reshape %a : (tensor<8x8xf32>) -> tensor<64xf32>
  %b = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %c = stablehlo.transpose %b, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = stablehlo.dot_general %c, %x, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %e = stablehlo.reshape %d : (tensor<8x8xf32>) -> tensor<64xf32>
  %f = stablehlo.add %r, %e : tensor<64xf32>
  return %f : tensor<64xf32>
})");
  const std::vector<double> x = small_ints(kN * kN, 1);
  const std::vector<double> d = ref_d(x);
  for (int opt : {0, 2}) {
    compiler::CompileOptions o;
    o.opt_level = opt;
    LoadedExecutable exe(compiler::compile(m, o));
    if (opt == 0) {
      const compiler::BufferAssignment& p = exe.executable().buffers;
      EXPECT_LT(p.arena_bytes, p.intermediate_bytes);  // the plan does reuse a buffer
    }
    const HostTensor in = HostTensor::from_doubles(TensorType(DType::kF32, {kN, kN}), x);
    for (int run = 0; run < 2; ++run) {  // the second run gets the recycled arena
      const std::vector<HostTensor> out = exe.run({in});
      for (int i = 0; i < kN; ++i)
        for (int j = 0; j < kN; ++j)
          ASSERT_EQ(out[0].get(i * kN + j), x[j * kN + i] + d[i * kN + j])
              << "O" << opt << " run " << run << " at (" << i << ", " << j << ")";
    }
  }
}

const char* kStep = R"(
func.func @main(%p: tensor<8x8xf32> {jax.buffer_donor = true}, %g: tensor<8x8xf32>,
                %q: tensor<8x8xf32> {tf.aliasing_output = 1 : i32})
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %two = stablehlo.constant dense<2.0> : tensor<8x8xf32>
  %0 = stablehlo.multiply %two, %g : tensor<8x8xf32>
  %1 = stablehlo.subtract %p, %0 : tensor<8x8xf32>
  %2 = stablehlo.add %q, %g : tensor<8x8xf32>
  %3 = stablehlo.dot_general %q, %g, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %1, %2, %3 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
})";

struct StepRef {
  std::vector<double> p, g, q, out0, out1, out2;
  StepRef() : p(small_ints(64, 1)), g(small_ints(64, 2)), q(small_ints(64, 3)) {
    for (int i = 0; i < 64; ++i) {
      out0.push_back(p[i] - 2 * g[i]);
      out1.push_back(q[i] + g[i]);
    }
    out2.assign(64, 0);
    for (int i = 0; i < kN; ++i)
      for (int j = 0; j < kN; ++j)
        for (int k = 0; k < kN; ++k) out2[i * kN + j] += q[i * kN + k] * g[k * kN + j];
  }
};

void expect_values(const HostTensor& t, const std::vector<double>& want, const char* what) {
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(t.get(static_cast<std::int64_t>(i)), want[i]) << what << " at " << i;
}

TEST(ExecutorBuffersTest, ADonatedInputHoldsItsResultInPlace) {
  LoadedExecutable exe(compiler::compile(hlo::parse_module(kStep)));
  // %p goes to result 0 (nothing reads it after the update); %q is read by the dot after
  // result 1 is computed, so result 1 gets a buffer of its own.
  EXPECT_EQ(exe.executable().buffers.donor_of_result, (std::vector<int>{0, -1, -1}));
  const StepRef ref;
  const TensorType t(DType::kF32, {kN, kN});
  std::vector<HostTensor> in{HostTensor::from_doubles(t, ref.p), HostTensor::from_doubles(t, ref.g),
                             HostTensor::from_doubles(t, ref.q)};
  const std::uint8_t* p_storage = in[0].data.data();
  const std::uint8_t* q_storage = in[2].data.data();
  const std::vector<HostTensor> out = exe.run_donating(std::move(in));
  EXPECT_EQ(out[0].data.data(), p_storage);
  EXPECT_NE(out[1].data.data(), q_storage);
  expect_values(out[0], ref.out0, "result 0");
  expect_values(out[1], ref.out1, "result 1");
  expect_values(out[2], ref.out2, "result 2");
}

TEST(ExecutorBuffersTest, AnOutputOverAnInputStillReadLaterIsStaged) {
  // The caller passes every input's buffer as the output of its type, allowed or not: result
  // 0 is written over %p in place, result 1 over %q only after the dot has read %q.
  LoadedExecutable exe(compiler::compile(hlo::parse_module(kStep)));
  const StepRef ref;
  const TensorType t(DType::kF32, {kN, kN});
  HostTensor p = HostTensor::from_doubles(t, ref.p), g = HostTensor::from_doubles(t, ref.g),
             q = HostTensor::from_doubles(t, ref.q), out2(t);
  const std::vector<const void*> in{p.data.data(), g.data.data(), q.data.data()};
  const std::vector<void*> out{p.data.data(), q.data.data(), out2.data.data()};
  exe.run(in, out);
  expect_values(p, ref.out0, "result 0 in %p");
  expect_values(q, ref.out1, "result 1 in %q");
  expect_values(out2, ref.out2, "result 2");
  expect_values(g, ref.g, "%g");
}

TEST(ExecutorBuffersTest, AnOutputOverAnInputReadStridedIsStaged) {
  // The loop reads %p transposed (a broadcast with dims [1, 0]); written in place, later chunks
  // would read elements it already overwrote. 128x128 spans many 1024-element chunks.
  constexpr int n = 128;
  const hlo::Module m = hlo::parse_module(R"(
func.func @main(%p: tensor<128x128xf32> {jax.buffer_donor = true}, %g: tensor<128x128xf32>)
    -> tensor<128x128xf32> {
  %t = stablehlo.broadcast_in_dim %p, dims = [1, 0] : (tensor<128x128xf32>) -> tensor<128x128xf32>
  %0 = stablehlo.add %t, %g : tensor<128x128xf32>
  return %0 : tensor<128x128xf32>
})");
  LoadedExecutable exe(compiler::compile(m));
  const TensorType t(DType::kF32, {n, n});
  const std::vector<double> pv = small_ints(n * n, 4), gv = small_ints(n * n, 5);
  HostTensor p = HostTensor::from_doubles(t, pv), g = HostTensor::from_doubles(t, gv);
  const std::vector<const void*> in{p.data.data(), g.data.data()};
  const std::vector<void*> out{p.data.data()};
  exe.run(in, out);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      ASSERT_EQ(p.get(i * n + j), pv[j * n + i] + gv[i * n + j]) << i << ", " << j;
}

// A result that is a reshape of a kernel's value: the kernel writes into the caller's buffer
// (a reshape moves no data), seen by a custom call that records where it was asked to write;
// the value is also read by a later kernel, and returned a second time as itself.
TEST(ExecutorBuffersTest, AReshapedResultIsComputedInTheCallersBuffer) {
  static void* written_at = nullptr;
  register_custom_call("test.record_output", [](const CustomCallArgs& a) {
    written_at = a.outputs[0];
    const auto* x = static_cast<const float*>(a.inputs[0]);
    auto* y = static_cast<float*>(a.outputs[0]);
    for (int i = 0; i < kN * kN; ++i) y[i] = 2 * x[i];
  });
  const hlo::Module m = hlo::parse_module(R"(
func.func @main(%p: tensor<8x8xf32>) -> (tensor<64xf32>, tensor<4x16xf32>, tensor<8x8xf32>) {
  %0 = stablehlo.custom_call @test.record_output(%p) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = stablehlo.reshape %0 : (tensor<8x8xf32>) -> tensor<64xf32>
  %2 = stablehlo.reshape %0 : (tensor<8x8xf32>) -> tensor<4x16xf32>
  %3 = stablehlo.add %0, %p : tensor<8x8xf32>
  return %1, %2, %3 : tensor<64xf32>, tensor<4x16xf32>, tensor<8x8xf32>
})");
  LoadedExecutable exe(compiler::compile(m));
  const std::vector<double> pv = small_ints(kN * kN, 6);
  HostTensor p = HostTensor::from_doubles(TensorType(DType::kF32, {kN, kN}), pv);
  HostTensor r0(TensorType(DType::kF32, {kN * kN})), r1(TensorType(DType::kF32, {4, 16})),
      r2(TensorType(DType::kF32, {kN, kN}));
  exe.run(std::vector<const void*>{p.data.data()},
          std::vector<void*>{r0.data.data(), r1.data.data(), r2.data.data()});
  EXPECT_EQ(written_at, r0.data.data());
  for (int i = 0; i < kN * kN; ++i) {
    const double x = pv[static_cast<std::size_t>(i)];
    ASSERT_EQ(r0.get(i), 2 * x) << i;
    ASSERT_EQ(r1.get(i), 2 * x) << i;
    ASSERT_EQ(r2.get(i), 3 * x) << i;
  }
}

}  // namespace
}  // namespace vtrn::runtime
