// custom_call @vtrn.attention priced as the ops it stands for: one kernel whose modeled time is
// the sum of the kernels those ops compile to, and a call that is not the kernel's rejected.
#include "vtrn/compiler/attention_through_memory.h"

#include <gtest/gtest.h>

#include "vtrn/compiler/executable.h"

namespace vtrn::compiler {
namespace {

using hlo::Builder;
using hlo::DType;
using hlo::TensorType;
using hlo::Value;

hlo::Module attention(DType d, bool as_call, const std::string& config, int operands = 3) {
  Builder b("attention");
  const TensorType q(d, {8, 8, 128, 32}), kv(d, {8, 4, 128, 32});
  Value qv = b.param(q), k = b.param(kv), v = b.param(kv);
  if (!as_call)
    return b.finish(
        attention_through_memory(b, qv, k, v, {}, *parse_flash_attention_config(config)));
  std::vector<Value> in{qv, k, v};
  in.resize(static_cast<std::size_t>(operands), qv);
  return b.finish(
      b.custom_call(std::string(kAttentionTarget), in, {q, attention_saved_type(q, kv)}, config));
}

TEST(AttentionThroughMemoryTest, ACallIsOneKernelPricedAsItsOps) {
  for (DType d : {DType::kF32, DType::kBF16}) {
    for (bool causal : {true, false}) {
      const std::string config = flash_attention_config({causal, 0.17677669529663687});
      const Executable call = compile(attention(d, true, config));
      const Executable ops = compile(attention(d, false, config));
      ASSERT_EQ(call.kernels.size(), 1u);
      ASSERT_GT(ops.kernels.size(), 2u);  // two products and the softmax between them
      EXPECT_DOUBLE_EQ(call.modeled_time_s(), ops.modeled_time_s());
      double flops = 0, dma = 0;
      for (const Kernel& k : ops.kernels) flops += k.cost.flops, dma += k.cost.dma_s;
      EXPECT_DOUBLE_EQ(call.kernels[0].cost.flops, flops);
      EXPECT_DOUBLE_EQ(call.kernels[0].cost.dma_s, dma);
      // 2 * 8 * 8 * 128 * 128 * 32 FLOPs per product, the masked ones included: the module
      // through HBM computes every score.
      EXPECT_DOUBLE_EQ(flops, 2 * 2.0 * 8 * 8 * 128 * 128 * 32);
    }
  }
}

hlo::Module attention_backward(DType d, bool as_call, const std::string& config,
                               DType probabilities, bool mask = false) {
  Builder b("attention_backward");
  const TensorType q(d, {8, 8, 128, 32}), kv(d, {8, 4, 128, 32});
  Value g = b.param(q), qv = b.param(q), k = b.param(kv), v = b.param(kv);
  if (!as_call)
    return b.finish(attention_backward_through_memory(
        b, g, qv, k, v, b.param(TensorType(probabilities, {8, 8, 128, 128})),
        *parse_flash_attention_config(config)));
  TensorType saved = attention_saved_type(q, kv);
  saved.dtype = probabilities;
  std::vector<Value> in{g, qv, k, v, b.param(saved), b.param(q)};
  if (mask) in.push_back(b.param(TensorType(DType::kPred, {128, 128})));
  return b.finish(b.custom_call(std::string(kAttentionBackwardTarget), in, {q, kv, kv}, config));
}

TEST(AttentionThroughMemoryTest, ABackwardCallIsOneKernelPricedAsItsOps) {
  for (DType d : {DType::kF32, DType::kBF16}) {
    const std::string config = flash_attention_config({true, 0.17677669529663687});
    const Executable call = compile(attention_backward(d, true, config, d));
    const Executable ops = compile(attention_backward(d, false, config, d));
    ASSERT_EQ(call.kernels.size(), 1u);
    ASSERT_GT(ops.kernels.size(), 4u);  // four products and the softmax backward
    EXPECT_DOUBLE_EQ(call.modeled_time_s(), ops.modeled_time_s());
    double flops = 0;
    for (const Kernel& k : ops.kernels) flops += k.cost.flops;
    EXPECT_DOUBLE_EQ(call.kernels[0].cost.flops, flops);
    EXPECT_DOUBLE_EQ(flops, 4 * 2.0 * 8 * 8 * 128 * 128 * 32);
  }
  // The mask changes nothing the ops price (the saved probabilities carry it).
  const std::string config = flash_attention_config({false, 0.25});
  EXPECT_DOUBLE_EQ(
      compile(attention_backward(DType::kF32, true, config, DType::kF32, true)).modeled_time_s(),
      compile(attention_backward(DType::kF32, false, config, DType::kF32)).modeled_time_s());
  // Probabilities of another dtype than the query's are not the kernel's.
  EXPECT_THROW(compile(attention_backward(DType::kBF16, true, flash_attention_config({true, 1}),
                                          DType::kF32)),
               hlo::Error);
}

hlo::Module masked_attention(bool as_call, const TensorType& mask) {
  Builder b("attention");
  const TensorType q(DType::kF32, {2, 4, 64, 16});
  Value qv = b.param(q), k = b.param(q), v = b.param(q), m = b.param(mask);
  const FlashAttentionConfig config{false, 0.25};
  if (!as_call) return b.finish(attention_through_memory(b, qv, k, v, m, config));
  return b.finish(b.custom_call(std::string(kAttentionTarget), {qv, k, v, m},
                                {q, attention_saved_type(q, q)}, flash_attention_config(config)));
}

TEST(AttentionThroughMemoryTest, ACallWithAMaskIsPricedAsItsOps) {
  for (const TensorType& mask :
       {TensorType(DType::kPred, {64, 64}), TensorType(DType::kF32, {2, 1, 64, 64})}) {
    const Executable call = compile(masked_attention(true, mask));
    ASSERT_EQ(call.kernels.size(), 1u);
    EXPECT_DOUBLE_EQ(call.modeled_time_s(),
                     compile(masked_attention(false, mask)).modeled_time_s());
  }
  // A mask that does not broadcast to [B, H, L, S], or of another float dtype, is not the call's.
  EXPECT_THROW(compile(masked_attention(true, TensorType(DType::kPred, {64, 32}))), hlo::Error);
  EXPECT_THROW(compile(masked_attention(true, TensorType(DType::kBF16, {64, 64}))), hlo::Error);
}

TEST(AttentionThroughMemoryTest, ACallThatIsNotTheKernelsFailsToCompile) {
  EXPECT_THROW(compile(attention(DType::kF32, true, "causal=1")), hlo::Error);
  EXPECT_THROW(compile(attention(DType::kF32, true, flash_attention_config({true, 1}), 2)),
               hlo::Error);
  EXPECT_THROW(compile(attention(DType::kF64, true, flash_attention_config({true, 1}))),
               hlo::Error);
  // The probabilities without the logsumexp after each row are not the call's result.
  Builder b("attention");
  const TensorType q(DType::kF32, {1, 2, 16, 8});
  Value qv = b.param(q), k = b.param(q), v = b.param(q);
  EXPECT_THROW(compile(b.finish(b.custom_call(std::string(kAttentionTarget), {qv, k, v},
                                              {q, TensorType(DType::kF32, {1, 2, 16, 16})},
                                              flash_attention_config({true, 1})))),
               hlo::Error);
}

}  // namespace
}  // namespace vtrn::compiler
