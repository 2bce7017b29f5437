// Programs run on small inputs, checked against results computed in the test by plain loops.
#include "vtrn/nki/interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vtrn/nki/test_util.h"

namespace vtrn::nki {
namespace {

using namespace testing;

std::vector<float> iota_f(std::size_t n, float scale = 1) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale;
  return v;
}

TEST(InterpreterTest, TensorAddThroughSbuf) {
  Program p("trn2");
  const auto a = tensor(p, "a", Memory::kHbm, DType::kFloat32, {256, 64}, true);
  const auto b = tensor(p, "b", Memory::kHbm, DType::kFloat32, {256, 64}, true);
  const auto c = tensor(p, "c", Memory::kHbm, DType::kFloat32, {256, 64}, true);
  for (int half = 0; half < 2; ++half) {
    const auto ta = tensor(p, "ta", Memory::kSbuf, DType::kFloat32, {128, 64});
    const auto tb = tensor(p, "tb", Memory::kSbuf, DType::kFloat32, {128, 64});
    p.dma_copy(inst(whole(p, ta), {block(p, a, half * 128, 128, 0, 64)}, "load"));
    p.dma_copy(inst(whole(p, tb), {block(p, b, half * 128, 128, 0, 64)}, "load"));
    Instruction add = inst(whole(p, ta), {whole(p, ta), whole(p, tb)}, "tensor_tensor");
    add.alu0 = AluOp::kAdd;
    p.tensor_tensor(add);
    p.dma_copy(inst(block(p, c, half * 128, 128, 0, 64), {whole(p, ta)}, "store"));
  }
  auto va = iota_f(256 * 64), vb = iota_f(256 * 64, 0.5f);
  std::vector<float> vc(256 * 64);
  Interpreter run(p);
  run.bind(a, va.data(), va.size() * 4, false);
  run.bind(b, vb.data(), vb.size() * 4, false);
  run.bind(c, vc.data(), vc.size() * 4, true);
  run.run();
  for (std::size_t i = 0; i < vc.size(); ++i) ASSERT_EQ(vc[i], va[i] + vb[i]) << i;
}

TEST(InterpreterTest, UnwrittenResultHoldsNanSentinel) {
  Program p("trn2");
  const auto c = tensor(p, "c", Memory::kHbm, DType::kFloat32, {4, 4}, true);
  const auto t = tensor(p, "t", Memory::kSbuf, DType::kFloat32, {4, 4});
  p.dma_copy(inst(block(p, c, 0, 2, 0, 4), {block(p, t, 0, 2, 0, 4)}, "store"));  // t never written
  std::vector<float> vc(16, 1.0f);
  Interpreter run(p);
  run.bind(c, vc.data(), 64, true);
  run.run();
  for (float v : vc) EXPECT_TRUE(std::isnan(v));
}

TEST(InterpreterTest, MatmulAccumulatesLikePsum) {
  // dst = st^T . mv; with accumulate=auto the first write overwrites, later ones add.
  Program p("trn2");
  const int K = 4, M = 3, N = 5;
  const auto st_h = tensor(p, "st_h", Memory::kHbm, DType::kFloat32, {K, M}, true);
  const auto mv_h = tensor(p, "mv_h", Memory::kHbm, DType::kFloat32, {K, N}, true);
  const auto out = tensor(p, "out", Memory::kHbm, DType::kFloat32, {M, N}, true);
  const auto st = tensor(p, "st", Memory::kSbuf, DType::kBFloat16, {K, M});
  const auto mv = tensor(p, "mv", Memory::kSbuf, DType::kBFloat16, {K, N});
  const auto ps = tensor(p, "ps", Memory::kPsum, DType::kFloat32, {M, N});
  const auto sb = tensor(p, "sb", Memory::kSbuf, DType::kFloat32, {M, N});
  p.dma_copy(inst(whole(p, st), {whole(p, st_h)}, "load"));
  p.dma_copy(inst(whole(p, mv), {whole(p, mv_h)}, "load"));
  for (int i = 0; i < 3; ++i)
    p.matmul(inst(whole(p, ps), {whole(p, st), whole(p, mv)}, "nc_matmul"));
  p.tensor_copy(inst(whole(p, sb), {whole(p, ps)}, "tensor_copy"));
  p.dma_copy(inst(whole(p, out), {whole(p, sb)}, "store"));
  auto vs = iota_f(K * M, 0.25f), vm = iota_f(K * N, 0.5f);
  std::vector<float> vo(M * N);
  Interpreter run(p);
  run.bind(st_h, vs.data(), vs.size() * 4, false);
  run.bind(mv_h, vm.data(), vm.size() * 4, false);
  run.bind(out, vo.data(), vo.size() * 4, true);
  run.run();
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      float ref = 0;
      for (int k = 0; k < K; ++k) ref += vs[k * M + m] * vm[k * N + n];  // exact in bf16
      EXPECT_FLOAT_EQ(vo[m * N + n], 3 * ref) << m << "," << n;
    }
  }
}

TEST(InterpreterTest, MaskedLoadPastTheEndLeavesSentinels) {
  Program p("trn2");
  const auto x = tensor(p, "x", Memory::kHbm, DType::kFloat32, {3, 2}, true);
  const auto y = tensor(p, "y", Memory::kHbm, DType::kFloat32, {4, 2}, true);
  const auto t = tensor(p, "t", Memory::kSbuf, DType::kFloat32, {4, 2});
  Instruction load = inst(whole(p, t), {block(p, x, 0, 4, 0, 2)}, "load");
  load.mask = {1, 1, 1, 1, 1, 1, 0, 0};
  p.dma_copy(load);
  p.dma_copy(inst(whole(p, y), {whole(p, t)}, "store"));
  std::vector<float> vx = {1, 2, 3, 4, 5, 6}, vy(8);
  Interpreter run(p);
  run.bind(x, vx.data(), 24, false);
  run.bind(y, vy.data(), 32, true);
  run.run();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(vy[i], vx[i]);
  EXPECT_TRUE(std::isnan(vy[6]) && std::isnan(vy[7]));
}

TEST(InterpreterTest, ReduceActivationScalarAndTranspose) {
  Program p("trn2");
  const auto x_h = tensor(p, "x_h", Memory::kHbm, DType::kFloat32, {2, 3}, true);
  const auto out_h = tensor(p, "out_h", Memory::kHbm, DType::kFloat32, {3, 2}, true);
  const auto sum_h = tensor(p, "sum_h", Memory::kHbm, DType::kFloat32, {2, 1}, true);
  const auto x = tensor(p, "x", Memory::kSbuf, DType::kFloat32, {2, 3});
  const auto mx = tensor(p, "mx", Memory::kSbuf, DType::kFloat32, {2, 1});
  const auto e = tensor(p, "e", Memory::kSbuf, DType::kFloat32, {2, 3});
  const auto s = tensor(p, "s", Memory::kSbuf, DType::kFloat32, {2, 1});
  const auto sc = tensor(p, "sc", Memory::kSbuf, DType::kFloat32, {2, 3});
  const auto tp = tensor(p, "tp", Memory::kPsum, DType::kFloat32, {3, 2});
  const auto t = tensor(p, "t", Memory::kSbuf, DType::kFloat32, {3, 2});
  p.dma_copy(inst(whole(p, x), {whole(p, x_h)}, "load"));
  Instruction red = inst(whole(p, mx), {whole(p, x)}, "tensor_reduce");
  red.alu0 = AluOp::kMaximum;
  red.axes = {1};
  red.negate = true;
  p.tensor_reduce(red);  // mx = -max(x)
  Instruction act = inst(whole(p, e), {whole(p, x), whole(p, mx)}, "activation");
  act.func = ActFunc::kExp;
  act.bias = 1;
  act.imm0 = 1.0;
  act.has_reduce = true;
  act.reduce_dst = whole(p, s);
  act.reduce_op = AluOp::kAdd;
  p.activation(act);  // e = exp(x - max), s = sum(e)
  Instruction div = inst(whole(p, sc), {whole(p, e), whole(p, s)}, "tensor_scalar");
  div.alu0 = AluOp::kDivide;
  div.operand0 = 1;
  p.tensor_scalar(div);  // softmax
  Instruction tr = inst(whole(p, tp), {whole(p, sc)}, "nc_transpose");
  tr.engines = engine_bit(Engine::kTensor);
  p.transpose(tr);
  p.tensor_copy(inst(whole(p, t), {whole(p, tp)}, "tensor_copy"));
  p.dma_copy(inst(whole(p, out_h), {whole(p, t)}, "store"));
  p.dma_copy(inst(whole(p, sum_h), {whole(p, s)}, "store"));
  std::vector<float> vx = {0, 1, 2, -1, 0, 3}, vo(6), vs(2);
  Interpreter run(p);
  run.bind(x_h, vx.data(), 24, false);
  run.bind(out_h, vo.data(), 24, true);
  run.bind(sum_h, vs.data(), 8, true);
  run.run();
  for (int r = 0; r < 2; ++r) {
    const float mxv = std::max({vx[r * 3], vx[r * 3 + 1], vx[r * 3 + 2]});
    float sum = 0;
    for (int c = 0; c < 3; ++c) sum += std::exp(vx[r * 3 + c] - mxv);
    EXPECT_NEAR(vs[r], sum, 1e-6);
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(vo[c * 2 + r], std::exp(vx[r * 3 + c] - mxv) / sum, 1e-6);
  }
}

TEST(InterpreterTest, AffineSelectAndMemset) {
  Program p("trn2");
  const auto out_h = tensor(p, "out_h", Memory::kHbm, DType::kFloat32, {2, 2}, true);
  const auto a = tensor(p, "a", Memory::kSbuf, DType::kFloat32, {2, 2});
  const auto b = tensor(p, "b", Memory::kSbuf, DType::kFloat32, {2, 2});
  Instruction ms = inst(whole(p, a), {}, "memset");
  ms.imm0 = 7;
  p.memset(ms);
  Instruction sel = inst(whole(p, b), {whole(p, a)}, "affine_select");
  sel.mask = {1, 0, 1, 1};  // causal: q >= k
  sel.imm0 = -1e4;
  p.select(sel);
  p.dma_copy(inst(whole(p, out_h), {whole(p, b)}, "store"));
  std::vector<float> vo(4);
  Interpreter run(p);
  run.bind(out_h, vo.data(), 16, true);
  run.run();
  EXPECT_EQ(vo, (std::vector<float>{7, -1e4f, 7, 7}));
}

TEST(InterpreterTest, UnboundExternalTensorIsAnError) {
  Program p("trn2");
  const auto x = tensor(p, "x", Memory::kHbm, DType::kFloat32, {2, 2}, true);
  const auto t = tensor(p, "t", Memory::kSbuf, DType::kFloat32, {2, 2});
  p.dma_copy(inst(whole(p, t), {whole(p, x)}, "load"));
  Interpreter run(p);
  EXPECT_THROW(run.run(), std::invalid_argument);
}

}  // namespace
}  // namespace vtrn::nki
