// custom_call @vtrn.attention and @vtrn.attention_backward (compiler/attention_through_memory.h)
// run by the executor: the output, probabilities and logsumexp, and the gradients, against
// attention written out in double and against the ops each call stands for run through the
// executor's own loops; causal tiles that do not divide the query length, more queries than keys,
// grouped-query heads, bfloat16 and float16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "vtrn/compiler/attention_through_memory.h"
#include "vtrn/runtime/aten_attention.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime::test {
namespace {

using compiler::FlashAttentionConfig;

struct Case {
  DType dtype;
  std::int64_t batch, heads, kv_heads, q_len, kv_len, d;
  bool causal;
};

hlo::Module call_module(const Case& c, bool as_call) {
  Builder b("attention");
  const TensorType qt(c.dtype, {c.batch, c.heads, c.q_len, c.d});
  const TensorType kt(c.dtype, {c.batch, c.kv_heads, c.kv_len, c.d});
  Value q = b.param(qt), k = b.param(kt), v = b.param(kt);
  const FlashAttentionConfig config{c.causal, 1.0 / std::sqrt(static_cast<double>(c.d))};
  if (!as_call) return b.finish(compiler::attention_through_memory(b, q, k, v, {}, config));
  return b.finish(b.custom_call(std::string(compiler::kAttentionTarget), {q, k, v},
                                {qt, compiler::attention_saved_type(qt, kt)},
                                compiler::flash_attention_config(config)));
}

// The probabilities [B, H, L, S] of the call's saved result (each row followed by the float32
// bits of its logsumexp), and the logsumexps [B, H, L].
std::vector<double> saved_probabilities(const HostTensor& saved, std::int64_t kv_len) {
  const std::int64_t stride = saved.type.dims[3];
  std::vector<double> p;
  for (std::int64_t i = 0; i < saved.type.num_elements(); ++i)
    if (i % stride < kv_len) p.push_back(saved.get(i));
  return p;
}
std::vector<double> saved_logsumexp(const HostTensor& saved, std::int64_t kv_len) {
  const std::int64_t stride = saved.type.dims[3], es = hlo::dtype_size(saved.type.dtype);
  std::vector<double> lse;
  for (std::int64_t r = 0; r < saved.type.num_elements() / stride; ++r) {
    float x;
    std::memcpy(&x, saved.data.data() + (r * stride + kv_len) * es, sizeof x);
    lse.push_back(x);
  }
  return lse;
}

std::vector<HostTensor> inputs(const Case& c, unsigned seed) {
  const TensorType qt(c.dtype, {c.batch, c.heads, c.q_len, c.d});
  const TensorType kt(c.dtype, {c.batch, c.kv_heads, c.kv_len, c.d});
  return {HostTensor::from_doubles(qt, random_values(qt.num_elements(), -2, 2, seed, c.dtype)),
          HostTensor::from_doubles(kt, random_values(kt.num_elements(), -2, 2, seed + 1, c.dtype)),
          HostTensor::from_doubles(kt, random_values(kt.num_elements(), -2, 2, seed + 2, c.dtype))};
}

// {output, probabilities, logsumexp} in double, written out.
std::vector<std::vector<double>> attention_in_double(const Case& c,
                                                     const std::vector<HostTensor>& in) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  std::vector<double> o(static_cast<std::size_t>(c.batch * c.heads * c.q_len * c.d));
  std::vector<double> p(static_cast<std::size_t>(c.batch * c.heads * c.q_len * c.kv_len));
  std::vector<double> lse(static_cast<std::size_t>(c.batch * c.heads * c.q_len));
  for (std::int64_t b = 0; b < c.batch; ++b)
    for (std::int64_t h = 0; h < c.heads; ++h) {
      const std::int64_t kh = b * c.kv_heads + h / (c.heads / c.kv_heads);
      for (std::int64_t i = 0; i < c.q_len; ++i) {
        const std::int64_t row = (b * c.heads + h) * c.q_len + i;
        const std::int64_t visible = c.causal ? std::min(i + 1, c.kv_len) : c.kv_len;
        std::vector<double> s(static_cast<std::size_t>(visible));
        double mx = -INFINITY, sum = 0;
        for (std::int64_t j = 0; j < visible; ++j) {
          double dot = 0;
          for (std::int64_t t = 0; t < c.d; ++t)
            dot += in[0].get(row * c.d + t) * in[1].get((kh * c.kv_len + j) * c.d + t);
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        for (double& x : s) sum += x = std::exp(x - mx);
        lse[row] = mx + std::log(sum);
        for (std::int64_t j = 0; j < visible; ++j) p[row * c.kv_len + j] = s[j] / sum;
        for (std::int64_t t = 0; t < c.d; ++t) {
          double acc = 0;
          for (std::int64_t j = 0; j < visible; ++j)
            acc += p[row * c.kv_len + j] * in[2].get((kh * c.kv_len + j) * c.d + t);
          o[row * c.d + t] = acc;
        }
      }
    }
  return {o, p, lse};
}

void expect_near_all(const HostTensor& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
  ASSERT_EQ(got.type.num_elements(), static_cast<std::int64_t>(want.size())) << what;
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.get(static_cast<std::int64_t>(i)), want[i], tol) << what << " element " << i;
}

TEST(AttentionKernelTest, TheCallGivesAttentionAndWhatItsOpsGive) {
  const Case cases[] = {
      {DType::kF32, 2, 4, 4, 80, 80, 16, true},   // tiles of 32, 32, 16 rows
      {DType::kF32, 1, 3, 3, 40, 72, 8, false},   // more keys than queries
      {DType::kF32, 1, 2, 2, 96, 40, 8, true},    // more queries than keys
      {DType::kF32, 2, 4, 2, 64, 64, 16, true},   // grouped-query heads
      {DType::kF32, 1, 1, 1, 300, 300, 4, true},  // tiles of 38 rows
      {DType::kBF16, 1, 4, 1, 48, 48, 32, true},  // multi-query, bfloat16
      {DType::kF16, 1, 2, 2, 33, 33, 8, false},
  };
  unsigned seed = 10;
  for (const Case& c : cases) {
    const std::string what = std::string(hlo::dtype_name(c.dtype)) + " L " +
                             std::to_string(c.q_len) + " S " + std::to_string(c.kv_len) +
                             (c.causal ? " causal" : "");
    const auto in = inputs(c, seed += 3);
    const auto call = run(call_module(c, true), in);
    const auto ops = run(call_module(c, false), in);
    const auto exact = attention_in_double(c, in);
    // float32: sums of up to 300 terms in another order; the reduced types: one rounding of
    // the output and probabilities to them. The logsumexp is float32 in every case.
    const double tol = c.dtype == DType::kF32 ? 2e-6 : tolerance(c.dtype) * 2;
    const std::vector<double> got[] = {
        [&] {
          std::vector<double> o;
          for (std::int64_t i = 0; i < call[0].type.num_elements(); ++i)
            o.push_back(call[0].get(i));
          return o;
        }(),
        saved_probabilities(call[1], c.kv_len), saved_logsumexp(call[1], c.kv_len)};
    const char* names[] = {" output", " probabilities", " logsumexp"};
    for (int r = 0; r < 3; ++r) {
      const std::string part = what + names[r];
      ASSERT_EQ(got[r].size(), exact[r].size()) << part;
      for (std::size_t i = 0; i < got[r].size(); ++i)
        ASSERT_NEAR(got[r][i], exact[r][i], r == 2 ? 1e-5 : tol)
            << part << " (call vs double) " << i;
      if (r == 2) continue;  // the ops give no logsumexp
      for (std::size_t i = 0; i < got[r].size(); ++i)
        ASSERT_NEAR(got[r][i], ops[r].get(static_cast<std::int64_t>(i)), tol)
            << part << " (call vs its ops) " << i;
    }
  }
}

// The backward as a call, given (g, q, k, v, saved, output), or as the ops, given (g, q, k, v,
// probabilities).
hlo::Module backward_module(const Case& c, bool as_call) {
  Builder b("attention_backward");
  const TensorType qt(c.dtype, {c.batch, c.heads, c.q_len, c.d});
  const TensorType kt(c.dtype, {c.batch, c.kv_heads, c.kv_len, c.d});
  const TensorType pt(c.dtype, {c.batch, c.heads, c.q_len, c.kv_len});
  Value g = b.param(qt), q = b.param(qt), k = b.param(kt), v = b.param(kt);
  const FlashAttentionConfig config{c.causal, 1.0 / std::sqrt(static_cast<double>(c.d))};
  if (!as_call)
    return b.finish(
        compiler::attention_backward_through_memory(b, g, q, k, v, b.param(pt), config));
  Value saved = b.param(compiler::attention_saved_type(qt, kt)), out = b.param(qt);
  return b.finish(b.custom_call(std::string(compiler::kAttentionBackwardTarget),
                                {g, q, k, v, saved, out}, {qt, kt, kt},
                                compiler::flash_attention_config(config)));
}

// {dq, dk, dv} in double from the probabilities |p| the forward saved, written out.
std::vector<std::vector<double>> backward_in_double(const Case& c, const HostTensor& g,
                                                    const std::vector<HostTensor>& in,
                                                    const HostTensor& p) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  const std::int64_t S = c.kv_len, D = c.d;
  std::vector<double> dq(static_cast<std::size_t>(c.batch * c.heads * c.q_len * D));
  std::vector<double> dk(static_cast<std::size_t>(c.batch * c.kv_heads * S * D)), dv(dk.size());
  for (std::int64_t b = 0; b < c.batch; ++b)
    for (std::int64_t h = 0; h < c.heads; ++h) {
      const std::int64_t kh = b * c.kv_heads + h / (c.heads / c.kv_heads);
      for (std::int64_t i = 0; i < c.q_len; ++i) {
        const std::int64_t row = (b * c.heads + h) * c.q_len + i;
        std::vector<double> dp(static_cast<std::size_t>(S));
        double delta = 0;
        for (std::int64_t j = 0; j < S; ++j) {
          for (std::int64_t t = 0; t < D; ++t)
            dp[j] += g.get(row * D + t) * in[2].get((kh * S + j) * D + t);
          delta += p.get(row * S + j) * dp[j];
        }
        for (std::int64_t j = 0; j < S; ++j) {
          const double pj = p.get(row * S + j), ds = pj * (dp[j] - delta) * scale;
          for (std::int64_t t = 0; t < D; ++t) {
            dq[row * D + t] += ds * in[1].get((kh * S + j) * D + t);
            dk[(kh * S + j) * D + t] += ds * in[0].get(row * D + t);
            dv[(kh * S + j) * D + t] += pj * g.get(row * D + t);
          }
        }
      }
    }
  return {dq, dk, dv};
}

TEST(AttentionKernelTest, TheBackwardCallGivesTheGradientsAndWhatItsOpsGive) {
  const Case cases[] = {
      {DType::kF32, 2, 4, 4, 80, 80, 16, true},  {DType::kF32, 1, 3, 3, 40, 72, 8, false},
      {DType::kF32, 1, 2, 2, 96, 40, 8, true},   {DType::kF32, 2, 4, 2, 64, 64, 16, true},
      {DType::kF32, 1, 1, 1, 300, 300, 4, true}, {DType::kBF16, 1, 4, 1, 48, 48, 32, true},
      {DType::kF16, 1, 2, 2, 33, 33, 8, false},
  };
  unsigned seed = 40;
  for (const Case& c : cases) {
    const std::string what = std::string(hlo::dtype_name(c.dtype)) + " L " +
                             std::to_string(c.q_len) + " S " + std::to_string(c.kv_len) + " H " +
                             std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) +
                             (c.causal ? " causal" : "");
    const auto in = inputs(c, seed += 3);
    const TensorType qt(c.dtype, {c.batch, c.heads, c.q_len, c.d});
    const HostTensor g =
        HostTensor::from_doubles(qt, random_values(qt.num_elements(), -1, 1, seed + 7, c.dtype));
    const auto forward = run(call_module(c, true), in);
    const HostTensor p =
        HostTensor::from_doubles(TensorType(c.dtype, {c.batch, c.heads, c.q_len, c.kv_len}),
                                 saved_probabilities(forward[1], c.kv_len));
    const auto call =
        run(backward_module(c, true), {g, in[0], in[1], in[2], forward[1], forward[0]});
    const auto ops = run(backward_module(c, false), {g, in[0], in[1], in[2], p});
    const auto exact = backward_in_double(c, g, in, p);
    const double tol = c.dtype == DType::kF32 ? 1e-5 : tolerance(c.dtype) * 8;
    const char* names[] = {" dq", " dk", " dv"};
    for (int r = 0; r < 3; ++r) {
      const std::string part = what + names[r];
      expect_near_all(call[r], exact[r], tol, part + " (call vs double)");
      std::vector<double> from_ops(exact[r].size());
      for (std::size_t i = 0; i < from_ops.size(); ++i)
        from_ops[i] = ops[r].get(static_cast<std::int64_t>(i));
      expect_near_all(call[r], from_ops, tol, part + " (call vs its ops)");
    }
  }
}

// With an attention mask (a boolean one with a row whose keys are all hidden, a float one
// broadcast over heads, either with the causal mask too): the call against its ops.
TEST(AttentionKernelTest, TheCallWithAMaskGivesWhatItsOpsGive) {
  struct MaskCase {
    Case c;
    DType mask;
    Dims dims;
  };
  const MaskCase cases[] = {
      {{DType::kF32, 2, 3, 3, 40, 40, 8, false}, DType::kPred, {40, 40}},
      {{DType::kF32, 2, 3, 3, 40, 40, 8, true}, DType::kPred, {2, 1, 40, 40}},
      {{DType::kF32, 2, 4, 2, 24, 56, 8, false}, DType::kF32, {2, 1, 24, 56}},
      {{DType::kBF16, 1, 2, 2, 33, 33, 16, true}, DType::kBF16, {33, 1}},
  };
  unsigned seed = 70;
  for (const MaskCase& mc : cases) {
    const Case& c = mc.c;
    const std::string what = std::string(hlo::dtype_name(c.dtype)) + " mask " +
                             std::string(hlo::dtype_name(mc.mask)) + (c.causal ? " causal" : "");
    auto in = inputs(c, seed += 3);
    const TensorType mt(mc.mask, mc.dims);
    std::vector<double> mv = random_values(mt.num_elements(), -3, 1, seed + 5, mc.mask);
    if (mc.mask == DType::kPred) {
      for (std::size_t i = 0; i < mv.size(); ++i) mv[i] = mv[i] > -2 ? 1 : 0;
      for (std::int64_t j = 0; j < mc.dims.back(); ++j) mv[static_cast<std::size_t>(j)] = 0;
    }
    in.push_back(HostTensor::from_doubles(mt, mv));
    auto module = [&](bool as_call) {
      Builder b("attention");
      const TensorType qt(c.dtype, {c.batch, c.heads, c.q_len, c.d});
      const TensorType kt(c.dtype, {c.batch, c.kv_heads, c.kv_len, c.d});
      Value q = b.param(qt), k = b.param(kt), v = b.param(kt), m = b.param(mt);
      const FlashAttentionConfig config{c.causal, 0.3};
      if (!as_call) return b.finish(compiler::attention_through_memory(b, q, k, v, m, config));
      return b.finish(b.custom_call(std::string(compiler::kAttentionTarget), {q, k, v, m},
                                    {qt, compiler::attention_saved_type(qt, kt)},
                                    compiler::flash_attention_config(config)));
    };
    const auto call = run(module(true), in);
    const auto ops = run(module(false), in);
    const double tol = c.dtype == DType::kF32 ? 2e-6 : tolerance(c.dtype) * 2;
    std::vector<double> from_ops(static_cast<std::size_t>(ops[0].type.num_elements()));
    for (std::size_t i = 0; i < from_ops.size(); ++i)
      from_ops[i] = ops[0].get(static_cast<std::int64_t>(i));
    expect_near_all(call[0], from_ops, tol, what + " output");
    const std::vector<double> probabilities = saved_probabilities(call[1], c.kv_len);
    for (std::size_t i = 0; i < probabilities.size(); ++i)
      ASSERT_NEAR(probabilities[i], ops[1].get(static_cast<std::int64_t>(i)), tol)
          << what << " probabilities " << i;
    if (mc.mask == DType::kPred) {  // the row whose keys are all hidden: zero weights
      for (std::int64_t j = 0; j < c.kv_len; ++j) ASSERT_EQ(probabilities[j], 0.0) << what;
      EXPECT_EQ(saved_logsumexp(call[1], c.kv_len)[0], -INFINITY) << what;
    }
  }
}

// The causal mask's hidden keys are never multiplied: a NaN in the last key reaches only the
// last query row (the ops' -inf bias would add to the NaN and spread it to every row).
TEST(AttentionKernelTest, AHiddenKeyDoesNotReachTheRow) {
  const Case c{DType::kF32, 1, 1, 1, 40, 40, 8, true};
  auto in = inputs(c, 7);
  const std::int64_t last = (c.kv_len - 1) * c.d;
  in[1].as<float>()[last] = std::numeric_limits<float>::quiet_NaN();
  const auto got = run(call_module(c, true), in);
  in[1].as<float>()[last] = 0;
  const auto clean = run(call_module(c, true), in);
  for (std::int64_t i = 0; i < c.q_len; ++i)
    for (std::int64_t t = 0; t < c.d; ++t) {
      const double g = got[0].get(i * c.d + t);
      if (i + 1 < c.q_len)
        ASSERT_EQ(g, clean[0].get(i * c.d + t)) << "row " << i;
      else
        ASSERT_TRUE(std::isnan(g)) << "the last row reads the NaN key";
    }
}

// With ATen's flash attention installed (the torch layer installs libtorch's), a float32 call
// takes its output from it: the kernel gets the shapes, the mask as float32 with leading 1s
// added to its dims, the causal flag and the scale. With ATen's flash backward installed too,
// the attention call saves ATen's logsumexp, which that backward reads, and no probabilities;
// the flash call takes the logsumexp too.
TEST(AttentionKernelTest, AnInstalledAtenKernelGivesTheOutput) {
  static aten_attention::Call seen;
  static float mask_1 = 0;  // the mask lives while the call runs
  aten_attention::install(
      [](const aten_attention::Call& c) {
        seen = c;
        if (c.mask != nullptr) mask_1 = c.mask[1];
        std::fill_n(static_cast<float*>(c.out), c.batch * c.heads * c.q_len * c.d, 7.0f);
        if (c.logsumexp != nullptr) std::fill_n(c.logsumexp, c.batch * c.heads * c.q_len, -1.0f);
      },
      [](const aten_attention::BackwardCall&) {});
  const Case c{DType::kF32, 2, 4, 2, 24, 24, 8, true};
  auto in = inputs(c, 11);
  const TensorType mt(DType::kPred, {24, 24});
  std::vector<double> mv(static_cast<std::size_t>(mt.num_elements()), 1.0);
  mv[1] = 0;
  in.push_back(HostTensor::from_doubles(mt, mv));
  Builder b("attention");
  const TensorType qt(c.dtype, {c.batch, c.heads, c.q_len, c.d});
  const TensorType kt(c.dtype, {c.batch, c.kv_heads, c.kv_len, c.d});
  Value q = b.param(qt), k = b.param(kt), v = b.param(kt), m = b.param(mt);
  const FlashAttentionConfig config{c.causal, 0.25};
  const auto got = run(b.finish(b.custom_call(std::string(compiler::kAttentionTarget), {q, k, v, m},
                                              {qt, compiler::attention_saved_type(qt, kt)},
                                              compiler::flash_attention_config(config))),
                       in);
  EXPECT_EQ(seen.heads, 4);
  EXPECT_EQ(seen.kv_heads, 2);
  EXPECT_EQ(seen.q_len, 24);
  EXPECT_TRUE(seen.causal);
  EXPECT_EQ(seen.scale, 0.25);
  EXPECT_NE(seen.logsumexp, nullptr);
  ASSERT_NE(seen.mask, nullptr);
  EXPECT_EQ(seen.mask_dims[0], 1);
  EXPECT_EQ(seen.mask_dims[2], 24);
  EXPECT_EQ(mask_1, -std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < got[0].type.num_elements(); ++i) ASSERT_EQ(got[0].get(i), 7.0);
  // ATen's flash backward reads only the logsumexp: no probabilities, NaN in their place.
  const std::int64_t row = c.kv_len + 1;  // the probabilities, then the float32 logsumexp
  for (std::int64_t i = 0; i < got[1].type.num_elements(); ++i)
    if (i % row != c.kv_len) ASSERT_TRUE(std::isnan(got[1].get(i))) << i;
  for (double lse : saved_logsumexp(got[1], c.kv_len)) ASSERT_EQ(lse, -1.0);  // ATen's
  Builder fb("flash");
  Value fq = fb.param(qt), fk = fb.param(kt), fv = fb.param(kt);
  const auto flash =
      run(fb.finish(fb.custom_call(std::string(compiler::kFlashAttentionTarget), {fq, fk, fv},
                                   {qt, TensorType(DType::kF32, {c.batch, c.heads, c.q_len})},
                                   compiler::flash_attention_config(config))),
          {in[0], in[1], in[2]});
  EXPECT_NE(seen.logsumexp, nullptr);
  EXPECT_EQ(seen.mask, nullptr);
  EXPECT_EQ(flash[0].get(0), 7.0);
  EXPECT_EQ(flash[1].get(0), -1.0);
  aten_attention::install(nullptr);
}

// The flash backward takes the three gradients from ATen's flash backward where installed,
// handing it the shapes, the causal flag and the scale.
TEST(AttentionKernelTest, AnInstalledAtenBackwardGivesTheGradients) {
  static aten_attention::BackwardCall seen;
  aten_attention::install(nullptr, [](const aten_attention::BackwardCall& c) {
    seen = c;
    std::fill_n(static_cast<float*>(c.grad_q), c.batch * c.heads * c.q_len * c.d, 3.0f);
    std::fill_n(static_cast<float*>(c.grad_k), c.batch * c.kv_heads * c.kv_len * c.d, 4.0f);
    std::fill_n(static_cast<float*>(c.grad_v), c.batch * c.kv_heads * c.kv_len * c.d, 5.0f);
  });
  const Case c{DType::kF32, 1, 4, 2, 16, 16, 8, true};
  const TensorType qt(c.dtype, {c.batch, c.heads, c.q_len, c.d});
  const TensorType kt(c.dtype, {c.batch, c.kv_heads, c.kv_len, c.d});
  const TensorType lt(DType::kF32, {c.batch, c.heads, c.q_len});
  Builder b("flash_backward");
  Value g = b.param(qt), q = b.param(qt), k = b.param(kt), v = b.param(kt), o = b.param(qt),
        l = b.param(lt);
  const auto in = inputs(c, 13);
  const HostTensor zeros_q(qt), zeros_l(lt);
  const auto got = run(b.finish(b.custom_call(std::string(compiler::kFlashAttentionBackwardTarget),
                                              {g, q, k, v, o, l}, {qt, kt, kt},
                                              compiler::flash_attention_config({true, 0.5}))),
                       {zeros_q, in[0], in[1], in[2], zeros_q, zeros_l});
  EXPECT_EQ(seen.kv_heads, 2);
  EXPECT_EQ(seen.q_len, 16);
  EXPECT_TRUE(seen.causal);
  EXPECT_EQ(seen.scale, 0.5);
  EXPECT_EQ(got[0].get(0), 3.0);
  EXPECT_EQ(got[1].get(0), 4.0);
  EXPECT_EQ(got[2].get(kt.num_elements() - 1), 5.0);
  aten_attention::install(nullptr, nullptr);
}

// The attention backward takes its gradients from ATen's flash backward where installed,
// handing it the logsumexp saved after each row's probabilities, the forward's output and its
// mask (float32, leading 1s added to its dims).
TEST(AttentionKernelTest, AnInstalledAtenBackwardGivesTheAttentionGradients) {
  static aten_attention::BackwardCall seen;
  static std::vector<float> lse_seen;
  static float mask_1 = 0, out_0 = 0;
  aten_attention::install(nullptr, [](const aten_attention::BackwardCall& c) {
    seen = c;
    lse_seen.assign(c.logsumexp, c.logsumexp + c.batch * c.heads * c.q_len);
    mask_1 = c.mask != nullptr ? c.mask[1] : 0;
    out_0 = static_cast<const float*>(c.out)[0];
    std::fill_n(static_cast<float*>(c.grad_q), c.batch * c.heads * c.q_len * c.d, 3.0f);
    std::fill_n(static_cast<float*>(c.grad_k), c.batch * c.kv_heads * c.kv_len * c.d, 4.0f);
    std::fill_n(static_cast<float*>(c.grad_v), c.batch * c.kv_heads * c.kv_len * c.d, 5.0f);
  });
  const Case c{DType::kF32, 2, 4, 2, 12, 20, 8, false};
  const TensorType qt(c.dtype, {c.batch, c.heads, c.q_len, c.d});
  const TensorType kt(c.dtype, {c.batch, c.kv_heads, c.kv_len, c.d});
  const TensorType st = compiler::attention_saved_type(qt, kt);
  const TensorType mt(DType::kPred, {c.q_len, c.kv_len});
  ASSERT_EQ(st.dims[3], c.kv_len + 1);
  HostTensor saved(st), out(qt);
  const std::int64_t rows = c.batch * c.heads * c.q_len;
  for (std::int64_t r = 0; r < rows; ++r)
    saved.as<float>()[r * (c.kv_len + 1) + c.kv_len] = 0.5f * r;
  out.as<float>()[0] = 9;
  std::vector<double> mv(static_cast<std::size_t>(mt.num_elements()), 1.0);
  mv[1] = 0;
  const auto in = inputs(c, 17);
  Builder b("attention_backward");
  Value g = b.param(qt), q = b.param(qt), k = b.param(kt), v = b.param(kt), s = b.param(st),
        o = b.param(qt), m = b.param(mt);
  const auto got = run(
      b.finish(b.custom_call(std::string(compiler::kAttentionBackwardTarget), {g, q, k, v, s, o, m},
                             {qt, kt, kt}, compiler::flash_attention_config({false, 0.5}))),
      {HostTensor(qt), in[0], in[1], in[2], saved, out, HostTensor::from_doubles(mt, mv)});
  ASSERT_EQ(lse_seen.size(), static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) ASSERT_EQ(lse_seen[r], 0.5f * r) << "row " << r;
  EXPECT_EQ(out_0, 9.0f);
  EXPECT_EQ(seen.kv_heads, 2);
  EXPECT_EQ(seen.kv_len, 20);
  EXPECT_FALSE(seen.causal);
  EXPECT_EQ(seen.scale, 0.5);
  EXPECT_EQ(seen.mask_dims[0], 1);
  EXPECT_EQ(seen.mask_dims[2], c.q_len);
  EXPECT_EQ(seen.mask_dims[3], c.kv_len);
  EXPECT_EQ(mask_1, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(got[0].get(0), 3.0);
  EXPECT_EQ(got[1].get(0), 4.0);
  EXPECT_EQ(got[2].get(kt.num_elements() - 1), 5.0);
  aten_attention::install(nullptr, nullptr);
}

}  // namespace
}  // namespace vtrn::runtime::test
