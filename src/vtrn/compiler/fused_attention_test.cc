// The fused attention kernels' custom calls: their backend_config, and the compiler pricing each
// as one kernel of cost/attention_cost.h (a hand computation is in attention_cost_test.cc).
#include "vtrn/compiler/fused_attention.h"

#include <gtest/gtest.h>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"

namespace vtrn::compiler {
namespace {

using hlo::Builder;
using hlo::DType;
using hlo::TensorType;
using hlo::Value;

TEST(FusedAttentionTest, ConfigRoundTripsAndRejectsOthers) {
  const auto c = parse_flash_attention_config(flash_attention_config({true, 0.08838834764831845}));
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->causal);
  EXPECT_EQ(c->scale, 0.08838834764831845);
  EXPECT_FALSE(parse_flash_attention_config("causal=2;scale=1"));
  EXPECT_FALSE(parse_flash_attention_config("causal=1;scale="));
  EXPECT_FALSE(parse_flash_attention_config("causal=1;scale=1x"));
  EXPECT_FALSE(parse_flash_attention_config("kernel=k;latency_s=1;engine=dma"));
}

hlo::Module attention(const std::string& config) {
  Builder b("attention");
  const TensorType q(DType::kBF16, {1, 16, 4096, 128}), kv(DType::kBF16, {1, 8, 4096, 128});
  Value qv = b.param(q), kv1 = b.param(kv), kv2 = b.param(kv);
  std::vector<Value> r = b.custom_call(std::string(kFlashAttentionTarget), {qv, kv1, kv2},
                                       {q, TensorType(DType::kF32, {1, 16, 4096})}, config);
  return b.finish(r);
}

TEST(FusedAttentionTest, ACallIsOneKernelPricedAsTheFlashForward) {
  const Executable exe = compile(attention(flash_attention_config({true, 0.125})));
  ASSERT_EQ(exe.kernels.size(), 1u);
  cost::AttentionShape a;
  a.heads = 16;
  a.kv_heads = 8;
  a.q_len = a.kv_len = 4096;
  a.head_dim = 128;
  a.causal = true;
  const cost::KernelCost want = cost::CostModel::trn2().estimate(cost::flash_attention_forward(a));
  EXPECT_DOUBLE_EQ(exe.kernels[0].cost.time_s, want.time_s);
  EXPECT_DOUBLE_EQ(exe.kernels[0].cost.flops, want.flops);
  EXPECT_EQ(exe.kernels[0].cost.engine, cost::Engine::kTensor);
}

TEST(FusedAttentionTest, AMalformedConfigFailsToCompile) {
  EXPECT_THROW(compile(attention("causal=1")), hlo::Error);
}

}  // namespace
}  // namespace vtrn::compiler
