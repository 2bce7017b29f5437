// The kernel registry behind `custom_call @vtrn.nki`: fingerprints, the backend_config text,
// and running a registered kernel on a call's buffers (results and mutated inputs), checked
// against values computed here.
#include "vtrn/nki/registry.h"

#include <gtest/gtest.h>

#include <vector>

#include "vtrn/nki/test_util.h"

namespace vtrn::nki {
namespace {

using namespace testing;

/// c = a + b, and a += b written back into a (a is an input the kernel mutates).
RegisteredKernel add_kernel(double scale) {
  Program p("trn2");
  const auto a = tensor(p, "a", Memory::kHbm, DType::kFloat32, {8, 16}, true);
  const auto b = tensor(p, "b", Memory::kHbm, DType::kFloat32, {8, 16}, true);
  const auto c = tensor(p, "c", Memory::kHbm, DType::kFloat32, {8, 16}, true);
  const auto ta = tensor(p, "ta", Memory::kSbuf, DType::kFloat32, {8, 16});
  const auto tb = tensor(p, "tb", Memory::kSbuf, DType::kFloat32, {8, 16});
  p.dma_copy(inst(whole(p, ta), {whole(p, a)}, "load"));
  p.dma_copy(inst(whole(p, tb), {whole(p, b)}, "load"));
  Instruction mul = inst(whole(p, tb), {whole(p, tb)}, "tensor_scalar");
  mul.alu0 = AluOp::kMultiply;
  mul.imm0 = scale;
  p.tensor_scalar(mul);
  Instruction add = inst(whole(p, ta), {whole(p, ta), whole(p, tb)}, "tensor_tensor");
  add.alu0 = AluOp::kAdd;
  p.tensor_tensor(add);
  p.dma_copy(inst(whole(p, c), {whole(p, ta)}, "store"));
  p.dma_copy(inst(whole(p, a), {whole(p, ta)}, "store"));
  return RegisteredKernel{p, {a, b}, {c}, {0}};
}

TEST(RegistryTest, FingerprintIsTheProgramsContent) {
  EXPECT_EQ(fingerprint(add_kernel(2).program), fingerprint(add_kernel(2).program));
  EXPECT_NE(fingerprint(add_kernel(2).program), fingerprint(add_kernel(3).program));
}

TEST(RegistryTest, BackendConfigRoundTrips) {
  auto k = register_kernel("registry_test_config", add_kernel(2));
  ASSERT_NE(k, nullptr);
  EXPECT_GT(k->latency_s, 0);
  EXPECT_EQ(find_kernel("registry_test_config"), k);
  EXPECT_EQ(find_kernel("registry_test_absent"), nullptr);
  const auto c = parse_backend_config(backend_config("registry_test_config", *k));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->kernel, "registry_test_config");
  EXPECT_EQ(c->latency_s, k->latency_s);
  EXPECT_EQ(c->engine, k->engine);
  EXPECT_FALSE(parse_backend_config("kernel=x;latency_s=-1;engine=dma"));
  EXPECT_FALSE(parse_backend_config("kernel=x;latency_s=1e-6"));
  EXPECT_FALSE(parse_backend_config("kernel=x;latency_s=1e-6;engine=warp"));
  EXPECT_FALSE(parse_backend_config("{}"));
}

TEST(RegistryTest, RunsOnTheCallsBuffersAndLeavesInputsAlone) {
  auto k = register_kernel("registry_test_run", add_kernel(2));
  std::vector<float> a(128), b(128), c(128, -1.0f), a_new(128, -1.0f);
  for (int i = 0; i < 128; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.25f * static_cast<float>(i);
  }
  const std::vector<float> a0 = a;
  run_kernel(*k, {a.data(), b.data()}, {512, 512}, {c.data(), a_new.data()}, {512, 512});
  for (int i = 0; i < 128; ++i) {
    ASSERT_EQ(c[i], a0[i] + 2 * b[i]) << i;
    ASSERT_EQ(a_new[i], a0[i] + 2 * b[i]) << i;
  }
  EXPECT_EQ(a, a0);  // the call is functional: the mutated input's new value is a result
  const std::string e = error_of([&] {
    run_kernel(*k, {a.data(), b.data()}, {512, 256}, {c.data(), a_new.data()}, {512, 512});
  });
  EXPECT_EQ(e, "NKI kernel call: operand 1 has 256 bytes, the kernel's tensor has 512");
}

TEST(RegistryTest, RejectsBindingsThatAreNotExternal) {
  RegisteredKernel k = add_kernel(2);
  k.inputs = {3};  // ta, an SBUF tile
  EXPECT_EQ(error_of([&] { register_kernel("registry_test_bad", k); }),
            "NKI kernel registry_test_bad: tensor 3 is not an external tensor of the program");
}

}  // namespace
}  // namespace vtrn::nki
