// `custom_call @vtrn.nki` end to end: a registered NKI kernel inside a module is costed at its
// schedule's latency, runs through the interpreter (values checked against the sum computed
// here), and an unknown kernel or a malformed backend_config is an error naming it.
#include <gtest/gtest.h>

#include <string>

#include "vtrn/nki/registry.h"
#include "vtrn/nki/test_util.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

/// c = a + b over an (8, 16) float32 tile.
nki::RegisteredKernel add_kernel() {
  using namespace nki::testing;
  nki::Program p("trn2");
  const auto a = tensor(p, "a", nki::Memory::kHbm, nki::DType::kFloat32, {8, 16}, true);
  const auto b = tensor(p, "b", nki::Memory::kHbm, nki::DType::kFloat32, {8, 16}, true);
  const auto c = tensor(p, "c", nki::Memory::kHbm, nki::DType::kFloat32, {8, 16}, true);
  const auto ta = tensor(p, "ta", nki::Memory::kSbuf, nki::DType::kFloat32, {8, 16});
  const auto tb = tensor(p, "tb", nki::Memory::kSbuf, nki::DType::kFloat32, {8, 16});
  p.dma_copy(inst(whole(p, ta), {whole(p, a)}, "load"));
  p.dma_copy(inst(whole(p, tb), {whole(p, b)}, "load"));
  nki::Instruction add = inst(whole(p, ta), {whole(p, ta), whole(p, tb)}, "tensor_tensor");
  add.alu0 = nki::AluOp::kAdd;
  p.tensor_tensor(add);
  p.dma_copy(inst(whole(p, c), {whole(p, ta)}, "store"));
  return nki::RegisteredKernel{p, {a, b}, {c}, {}};
}

hlo::Module call_module(const std::string& config) {
  Builder b;
  const TensorType t(DType::kF32, {8, 16});
  Value x = b.param(t), y = b.param(t);
  Value sum = b.custom_call("vtrn.nki", {x, y}, {t}, config)[0];
  return b.finish({b.mul(sum, sum)});
}

TEST(ExecutorNkiTest, RunsTheRegisteredKernelAtItsModeledTime) {
  auto k = nki::register_kernel("executor_nki_test_add", add_kernel());
  const hlo::Module m = call_module(nki::backend_config("executor_nki_test_add", *k));
  const compiler::Executable exe = compiler::compile(m);
  double call_s = -1;
  for (const compiler::Kernel& kernel : exe.kernels)
    if (exe.module.main.ops[static_cast<std::size_t>(kernel.ops.back())].kind ==
        OpKind::kCustomCall)
      call_s = kernel.cost.time_s;
  EXPECT_EQ(call_s, k->latency_s);
  EXPECT_GE(exe.modeled_time_s(), k->latency_s);
  const TensorType t(DType::kF32, {8, 16});
  std::vector<double> xs(128), ys(128);
  for (int i = 0; i < 128; ++i) {
    xs[i] = i;
    ys[i] = 0.5 * i;
  }
  auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys)});
  for (int i = 0; i < 128; ++i) ASSERT_EQ(out[0].get(i), (xs[i] + ys[i]) * (xs[i] + ys[i])) << i;
}

TEST(ExecutorNkiTest, UnknownKernelAndBadConfigAreErrors) {
  const TensorType t(DType::kF32, {8, 16});
  const std::vector<HostTensor> in{HostTensor::from_doubles(t, std::vector<double>(128, 1)),
                                   HostTensor::from_doubles(t, std::vector<double>(128, 2))};
  try {
    run(call_module("kernel=executor_nki_test_absent;latency_s=1e-06;engine=dma"), in);
    FAIL() << "no error";
  } catch (const ExecError& e) {
    EXPECT_NE(std::string(e.what()).find("names NKI kernel executor_nki_test_absent, which this "
                                         "process has not traced"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(compiler::compile(call_module("kernel=x")), hlo::Error);
}

}  // namespace
}  // namespace vtrn::runtime
