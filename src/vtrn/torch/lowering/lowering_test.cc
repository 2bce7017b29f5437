// Lowerings built from OpCalls, compiled and run by the executor, against values computed by
// hand here; and PyTorch's type promotion against torch.result_type's documented results.
// (The full per-op parity against the CPU is tests/python/test_op_parity.py.)
#include "vtrn/torch/lowering/lowering.h"

#include <gtest/gtest.h>

#include <cmath>

#include "vtrn/compiler/executable.h"
#include "vtrn/runtime/executor.h"

namespace vtrn::lowering {
namespace {

using runtime::HostTensor;

ArgSpec tensor_arg(DType d, std::vector<std::int64_t> dims) {
  ArgSpec a;
  a.kind = ArgKind::kTensor;
  a.types = {TensorType(d, std::move(dims))};
  return a;
}
ArgSpec scalar_arg(DType d) {
  ArgSpec a;
  a.kind = ArgKind::kScalar;
  a.types = {TensorType(d, {})};
  return a;
}
ArgSpec int_arg(std::int64_t v, ArgKind kind = ArgKind::kInt) {
  ArgSpec a;
  a.kind = kind;
  a.ints = {v};
  return a;
}
ArgSpec none() { return ArgSpec{}; }

std::vector<HostTensor> run(const std::string& op, const OpCall& call,
                            const std::vector<HostTensor>& inputs) {
  const OpLowering* e = find_lowering(op);
  EXPECT_NE(e, nullptr) << op;
  LoweredCall lowered = lower_call(*e, call);
  runtime::LoadedExecutable exe(compiler::compile(lowered.module));
  return exe.run(inputs);
}

HostTensor host(DType d, std::vector<std::int64_t> dims, std::vector<double> v) {
  return HostTensor::from_doubles(TensorType(d, std::move(dims)), v);
}

TEST(PromotionTest, MatchesTorchResultType) {
  using P = PromotionInput;
  // torch.result_type(int64 tensor, 2.5) is float32 (the default dtype).
  EXPECT_EQ(result_type({{DType::kI64, P::kDimTensor}, {DType::kF64, P::kWrappedScalar}}),
            DType::kF32);
  // bf16 tensor + float scalar stays bf16; bf16 tensor + f16 tensor is float32.
  EXPECT_EQ(result_type({{DType::kBF16, P::kDimTensor}, {DType::kF64, P::kWrappedScalar}}),
            DType::kBF16);
  EXPECT_EQ(result_type({{DType::kBF16, P::kDimTensor}, {DType::kF16, P::kDimTensor}}),
            DType::kF32);
  // A 0-d float64 tensor does not promote a float32 tensor; it does promote an int tensor.
  EXPECT_EQ(result_type({{DType::kF32, P::kDimTensor}, {DType::kF64, P::kZeroDimTensor}}),
            DType::kF32);
  EXPECT_EQ(result_type({{DType::kI32, P::kDimTensor}, {DType::kF64, P::kZeroDimTensor}}),
            DType::kF64);
  // uint8 with int8 is int16; bool with anything is the other type.
  EXPECT_EQ(promote_types(DType::kU8, DType::kI8), DType::kI16);
  EXPECT_EQ(promote_types(DType::kPred, DType::kI32), DType::kI32);
  EXPECT_THROW(promote_types(DType::kU16, DType::kI8), Unsupported);
}

TEST(LoweringTest, AddWithAlphaAndBroadcast) {
  OpCall call;
  call.args = {tensor_arg(DType::kF32, {2, 3}), tensor_arg(DType::kF32, {3}),
               scalar_arg(DType::kF64), none()};
  auto out = run("add.out", call,
                 {host(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                  host(DType::kF32, {3}, {10, 20, 30}), host(DType::kF64, {}, {0.5})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, TensorType(DType::kF32, {2, 3}));
  const double want[] = {6, 12, 18, 9, 15, 21};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0].get(i), want[i]);
}

TEST(LoweringTest, OutOfAnotherDtypeIsLeftToTheCpu) {
  OpCall call;
  call.args = {tensor_arg(DType::kI64, {2}), tensor_arg(DType::kI64, {2}), none()};
  call.out_dtypes = {DType::kF32};
  auto out =
      run("div.out", call, {host(DType::kI64, {2}, {7, -7}), host(DType::kI64, {2}, {2, 2})});
  EXPECT_EQ(out[0].type.dtype, DType::kF32);
  EXPECT_EQ(out[0].get(0), 3.5);
  EXPECT_EQ(out[0].get(1), -3.5);
  // The result is float32; PyTorch casts it into some out= dtypes and refuses others (an
  // integer one here), so the CPU decides.
  call.out_dtypes = {DType::kI64};
  EXPECT_THROW(lower_call(*find_lowering("div.out"), call), Unsupported);
  call.out_dtypes = {DType::kF16};
  EXPECT_THROW(lower_call(*find_lowering("div.out"), call), Unsupported);
}

TEST(LoweringTest, InPlaceComputesInThePromotedDtypeThenCasts) {
  // 32768 + 32768 overflows float16 (65504 is its largest value). float32 self + float16
  // other promotes to float32: exact. A float16 op stays float16 (inf), whatever it is cast to.
  OpCall call;
  call.args = {tensor_arg(DType::kF32, {1}), tensor_arg(DType::kF16, {1}), none()};
  call.out_dtypes = {DType::kF32};
  call.in_place = true;
  auto out =
      run("add_.Tensor", call, {host(DType::kF32, {1}, {32768}), host(DType::kF16, {1}, {32768})});
  EXPECT_EQ(out[0].get(0), 65536);
  call.args = {tensor_arg(DType::kF16, {1}), tensor_arg(DType::kF16, {1}), none()};
  call.out_dtypes = {DType::kF16};
  out =
      run("add_.Tensor", call, {host(DType::kF16, {1}, {32768}), host(DType::kF16, {1}, {32768})});
  EXPECT_TRUE(std::isinf(out[0].get(0)));
}

TEST(PromotionTest, PythonFloatsTakeTheDefaultDtype) {
  using P = PromotionInput;
  // After torch.set_default_dtype(torch.float64): uint8 tensor + 5.5 is float64.
  EXPECT_EQ(
      result_type({{DType::kU8, P::kDimTensor}, {DType::kF64, P::kWrappedScalar}}, DType::kF64),
      DType::kF64);
  // A float32 tensor keeps its dtype; an int is int64 whatever the default.
  EXPECT_EQ(
      result_type({{DType::kF32, P::kDimTensor}, {DType::kF64, P::kWrappedScalar}}, DType::kF64),
      DType::kF32);
  EXPECT_EQ(
      result_type({{DType::kU8, P::kZeroDimTensor}, {DType::kI64, P::kWrappedScalar}}, DType::kF64),
      DType::kU8);
  // Integer true division takes the default dtype too: float64 is not lowered.
  OpCall call;
  call.args = {tensor_arg(DType::kI64, {2}), tensor_arg(DType::kI64, {2})};
  call.default_float = DType::kF64;
  EXPECT_THROW(lower_call(*find_lowering("div.Tensor"), call), Unsupported);
}

TEST(LoweringTest, PowPromotesTheExponentToBfloat16First) {
  // torch.pow(bfloat16 -1, int64 257) is +1 on the CPU: the exponent is converted to bfloat16
  // (257 rounds to 256) before the power is computed in float32.
  OpCall call;
  call.args = {tensor_arg(DType::kBF16, {2}), tensor_arg(DType::kI64, {2})};
  auto out = run("pow.Tensor_Tensor", call,
                 {host(DType::kBF16, {2}, {-1, 2}), host(DType::kI64, {2}, {257, 3})});
  EXPECT_EQ(out[0].type.dtype, DType::kBF16);
  EXPECT_EQ(out[0].get(0), 1);
  EXPECT_EQ(out[0].get(1), 8);
}

TEST(LoweringTest, MulReadsAOneElementOtherUnrounded) {
  // bfloat16 1.0078125 * int64 257: a one-element `other` multiplies at float32 (259 -> 260 in
  // bfloat16); a full tensor is rounded to bfloat16 first (256 * 1.0078125 = 258).
  OpCall call;
  call.args = {tensor_arg(DType::kBF16, {2}), tensor_arg(DType::kI64, {1})};
  auto one = run("mul.Tensor", call,
                 {host(DType::kBF16, {2}, {1.0078125, 1.0078125}), host(DType::kI64, {1}, {257})});
  EXPECT_EQ(one[0].get(0), 260);
  call.args[1] = tensor_arg(DType::kI64, {2});
  auto full =
      run("mul.Tensor", call,
          {host(DType::kBF16, {2}, {1.0078125, 1.0078125}), host(DType::kI64, {2}, {257, 257})});
  EXPECT_EQ(full[0].get(0), 258);
}

TEST(LoweringTest, CallsTheCpuRefusesAreLeftToIt) {
  // float - bool: sub_check raises; the lowering must not compute it.
  OpCall sub;
  sub.args = {tensor_arg(DType::kF32, {2}), tensor_arg(DType::kPred, {2}), scalar_arg(DType::kI64)};
  EXPECT_THROW(lower_call(*find_lowering("sub.Tensor"), sub), Unsupported);
  // An integer add with a float alpha: alpha_check raises.
  OpCall add;
  add.args = {tensor_arg(DType::kI64, {2}), tensor_arg(DType::kI64, {2}), scalar_arg(DType::kF64)};
  EXPECT_THROW(lower_call(*find_lowering("add.Tensor"), add), Unsupported);
  // lerp(bfloat16, float32): lerp_meta wants `end` of self's dtype.
  OpCall lerp;
  lerp.args = {tensor_arg(DType::kBF16, {2}), tensor_arg(DType::kF32, {2}),
               scalar_arg(DType::kF64)};
  EXPECT_THROW(lower_call(*find_lowering("lerp.Scalar"), lerp), Unsupported);
  // sum(x, dim=(0, 0)): a dim named twice.
  ArgSpec dims;
  dims.kind = ArgKind::kInts;
  dims.ints = {0, -2};
  OpCall sum;
  sum.args = {tensor_arg(DType::kF32, {2, 2}), dims, int_arg(0, ArgKind::kBool), none()};
  EXPECT_THROW(lower_call(*find_lowering("sum.dim_IntList"), sum), Unsupported);
  // A reduction over a tensor of 65 dims.
  dims.ints = {0};
  sum.args[0] = tensor_arg(DType::kF32, std::vector<std::int64_t>(65, 1));
  sum.args[1] = dims;
  EXPECT_THROW(lower_call(*find_lowering("sum.dim_IntList"), sum), Unsupported);
}

TEST(LoweringTest, AnyOverAnEmptyDimListReducesNothing) {
  ArgSpec dims;
  dims.kind = ArgKind::kInts;
  OpCall call;
  call.args = {tensor_arg(DType::kF32, {2, 3}), dims, int_arg(0, ArgKind::kBool)};
  auto out = run("any.dims", call, {host(DType::kF32, {2, 3}, {0, 1, 0, 2, 0, 0})});
  EXPECT_EQ(out[0].type, TensorType(DType::kPred, {2, 3}));
  const double want[] = {0, 1, 0, 1, 0, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0].get(i), want[i]);
  // sum over an empty dim list reduces every dim.
  call.args.push_back(none());
  auto sum = run("sum.dim_IntList", call, {host(DType::kF32, {2, 3}, {0, 1, 0, 2, 0, 0})});
  EXPECT_EQ(sum[0].type, TensorType(DType::kF32, {}));
  EXPECT_EQ(sum[0].get(0), 3);
}

TEST(LoweringTest, UnclaimedDtypeIsUnsupported) {
  OpCall call;
  call.args = {tensor_arg(DType::kF64, {2}), none()};
  EXPECT_THROW(lower_call(*find_lowering("exp.out"), call), Unsupported);
}

TEST(LoweringTest, SoftmaxAndLogSoftmaxRows) {
  OpCall call;
  call.args = {tensor_arg(DType::kF32, {2, 2}), int_arg(-1), int_arg(0, ArgKind::kBool)};
  const std::vector<double> x = {0, std::log(3.0), 1, 1};
  auto sm = run("_softmax", call, {host(DType::kF32, {2, 2}, x)});
  EXPECT_NEAR(sm[0].get(0), 0.25, 1e-7);
  EXPECT_NEAR(sm[0].get(1), 0.75, 1e-7);
  EXPECT_NEAR(sm[0].get(2), 0.5, 1e-7);
  auto lsm = run("_log_softmax", call, {host(DType::kF32, {2, 2}, x)});
  EXPECT_NEAR(lsm[0].get(0), std::log(0.25), 1e-6);
  EXPECT_NEAR(lsm[0].get(3), std::log(0.5), 1e-6);
}

TEST(LoweringTest, NllLossMeanSkipsIgnoredTargets) {
  OpCall call;
  call.args = {tensor_arg(DType::kF32, {3, 2}), tensor_arg(DType::kI64, {3}), none(), int_arg(1),
               int_arg(-100)};
  // log-probabilities; targets 1, 0 and an ignored -100: loss = (0.5 + 2) / 2.
  auto out = run("nll_loss_forward", call,
                 {host(DType::kF32, {3, 2}, {-1, -0.5, -2, -3, -7, -9}),
                  host(DType::kI64, {3}, {1, 0, -100})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].get(0), 1.25);
  EXPECT_EQ(out[1].get(0), 2.0);  // total_weight
}

TEST(LoweringTest, IndexSelectAndEmbeddingBackward) {
  OpCall sel;
  sel.args = {tensor_arg(DType::kF32, {3, 2}), int_arg(0), tensor_arg(DType::kI64, {4})};
  auto rows = run(
      "index_select", sel,
      {host(DType::kF32, {3, 2}, {0, 1, 10, 11, 20, 21}), host(DType::kI64, {4}, {2, 0, 2, 1})});
  const double want[] = {20, 21, 0, 1, 20, 21, 10, 11};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(rows[0].get(i), want[i]);

  OpCall bwd;
  bwd.args = {tensor_arg(DType::kF32, {4, 2}), tensor_arg(DType::kI64, {4}), int_arg(3), int_arg(1),
              int_arg(0, ArgKind::kBool)};
  // Rows 0 and 2 take index 2 (summed); row 3 takes the padding index 1 and is dropped.
  auto grad = run(
      "embedding_dense_backward", bwd,
      {host(DType::kF32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), host(DType::kI64, {4}, {2, 0, 2, 1})});
  const double want_grad[] = {3, 4, 0, 0, 6, 8};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(grad[0].get(i), want_grad[i]);
}

TEST(LoweringTest, FusedAdamWOneStepByHand) {
  auto list = [](std::vector<std::int64_t> dims, DType d = DType::kF32) {
    ArgSpec a;
    a.kind = ArgKind::kTensorList;
    a.types = {TensorType(d, std::move(dims))};
    return a;
  };
  auto real = [](double v) {
    ArgSpec a;
    a.kind = ArgKind::kFloat;
    a.real = v;
    return a;
  };
  ArgSpec empty_list;
  empty_list.kind = ArgKind::kTensorList;
  OpCall call;
  call.args = {list({1}),
               list({1}),
               list({1}),
               list({1}),
               empty_list,
               list({}),
               scalar_arg(DType::kF64),
               real(0.9),
               real(0.999),
               real(0.1),
               real(1e-8),
               int_arg(0, ArgKind::kBool),
               int_arg(0, ArgKind::kBool),
               none(),
               none()};
  call.out_dtypes = {DType::kF32, DType::kF32, DType::kF32, DType::kF32};
  call.in_place = true;
  LoweredCall lowered = lower_call(*find_lowering("_fused_adamw_"), call);
  EXPECT_EQ(lowered.written, (std::vector<bool>{true, false, true, true}));
  runtime::LoadedExecutable exe(compiler::compile(lowered.module));
  auto out = exe.run({host(DType::kF32, {1}, {1.0}), host(DType::kF32, {1}, {0.5}),
                      host(DType::kF32, {1}, {0}), host(DType::kF32, {1}, {0}),
                      host(DType::kF32, {}, {1}), host(DType::kF64, {}, {0.01})});
  // Step 1: p = 1 * (1 - 0.01 * 0.1); m = 0.05; v = 0.00025; m_hat = 0.5, v_hat = 0.25.
  const double p = 1.0 * (1 - 0.001);
  const double expected = p - 0.01 * 0.5 / (0.5 + 1e-8);
  EXPECT_NEAR(out[0].get(0), expected, 1e-6);
  EXPECT_NEAR(out[1].get(0), 0.05, 1e-7);
  EXPECT_NEAR(out[2].get(0), 0.00025, 1e-9);
}

}  // namespace
}  // namespace vtrn::lowering

namespace vtrn::lowering {
namespace {

TEST(LoweringTest, TrilKeepsTheLowerTriangle) {
  OpCall call;
  call.args = {tensor_arg(DType::kF32, {2, 3}), int_arg(0)};
  auto out = run("tril", call, {host(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  const double want[] = {1, 0, 0, 4, 5, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0].get(i), want[i]);
}

}  // namespace
}  // namespace vtrn::lowering

namespace vtrn::lowering {
namespace {

ArgSpec list_arg(std::vector<TensorType> types) {
  ArgSpec a;
  a.kind = ArgKind::kTensorList;
  a.types = std::move(types);
  return a;
}

TEST(ForeachLoweringTest, AddListWithAlphaUsesEachElementsDtype) {
  OpCall call;
  call.args = {list_arg({TensorType(DType::kF32, {2}), TensorType(DType::kBF16, {1})}),
               list_arg({TensorType(DType::kF32, {2}), TensorType(DType::kBF16, {1})}),
               scalar_arg(DType::kI64)};
  call.out_dtypes = {DType::kF32, DType::kBF16};
  call.in_place = true;
  auto out = run("_foreach_add_.List", call,
                 {host(DType::kF32, {2}, {1, 2}), host(DType::kBF16, {1}, {3}),
                  host(DType::kF32, {2}, {10, 20}), host(DType::kBF16, {1}, {0.5}),
                  host(DType::kI64, {}, {2})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].get(0), 21);
  EXPECT_EQ(out[0].get(1), 42);
  EXPECT_EQ(out[1].type.dtype, DType::kBF16);
  EXPECT_EQ(out[1].get(0), 4);
}

TEST(ForeachLoweringTest, NormOfEachTensor) {
  OpCall call;
  ArgSpec ord;
  ord.kind = ArgKind::kFloat;
  ord.real = 2;
  call.args = {list_arg({TensorType(DType::kF32, {2}), TensorType(DType::kF32, {3})}), ord, none()};
  auto out = run("_foreach_norm.Scalar", call,
                 {host(DType::kF32, {2}, {3, 4}), host(DType::kF32, {3}, {1, 2, 2})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].type.rank(), 0);
  EXPECT_EQ(out[0].get(0), 5);
  EXPECT_EQ(out[1].get(0), 3);
}

}  // namespace
}  // namespace vtrn::lowering

namespace vtrn::lowering {
namespace {

TEST(ForeachLoweringTest, AddScalarHasNoAlpha) {
  OpCall call;
  call.args = {list_arg({TensorType(DType::kF32, {2})}), scalar_arg(DType::kI64)};
  call.out_dtypes = {DType::kF32};
  call.in_place = true;
  auto out = run("_foreach_add_.Scalar", call,
                 {host(DType::kF32, {2}, {1, 2}), host(DType::kI64, {}, {3})});
  EXPECT_EQ(out[0].get(0), 4);
  EXPECT_EQ(out[0].get(1), 5);
}

}  // namespace
}  // namespace vtrn::lowering

namespace vtrn::lowering {
namespace {

TEST(LoweringTest, ExactGeluFollowsErfWithinItsApproximation) {
  OpCall call;
  ArgSpec mode;
  mode.kind = ArgKind::kString;
  mode.text = "none";
  std::vector<double> xs;
  for (int i = -80; i <= 80; ++i) xs.push_back(i / 10.0);
  const std::int64_t n = static_cast<std::int64_t>(xs.size());
  call.args = {tensor_arg(DType::kF32, {n}), mode};
  auto out = run("gelu", call, {host(DType::kF32, {n}, xs)});
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = xs[static_cast<std::size_t>(i)];
    const double want = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    // The erf approximation is good to 1.5e-7; float32 rounding adds a few ulps.
    EXPECT_NEAR(out[0].get(i), want, 1e-7 * std::fabs(x) + 1e-6) << "x = " << x;
  }
}

}  // namespace
}  // namespace vtrn::lowering

namespace vtrn::lowering {
namespace {

TEST(LoweringTest, AminAndAmaxStartFromEachIntegerTypesLimits) {
  // All-positive rows for amin and all-negative rows for amax: a wrong identity shows.
  for (DType d : {DType::kI8, DType::kI16, DType::kI32, DType::kI64, DType::kU8}) {
    const bool is_signed = d != DType::kU8;
    OpCall call;
    ArgSpec dims;
    dims.kind = ArgKind::kInts;
    dims.ints = {1};
    call.args = {tensor_arg(d, {2, 3}), dims, int_arg(0, ArgKind::kBool)};
    auto mins = run("amin", call, {host(d, {2, 3}, {5, 7, 9, 100, 3, 4})});
    EXPECT_EQ(mins[0].get(0), 5) << dtype_name(d);
    EXPECT_EQ(mins[0].get(1), 3) << dtype_name(d);
    if (!is_signed) continue;
    auto maxs = run("amax", call, {host(d, {2, 3}, {-5, -7, -9, -100, -3, -4})});
    EXPECT_EQ(maxs[0].get(0), -5) << dtype_name(d);
    EXPECT_EQ(maxs[0].get(1), -3) << dtype_name(d);
  }
}

}  // namespace
}  // namespace vtrn::lowering

namespace vtrn::lowering {
namespace {

TEST(PromotionTest, Complex64AsTorchResultTypeGivesIt) {
  using P = PromotionInput;
  // complex64 with any type but float64 stays complex64 (torch.promote_types).
  EXPECT_EQ(promote_types(DType::kC64, DType::kBF16), DType::kC64);
  EXPECT_EQ(promote_types(DType::kI64, DType::kC64), DType::kC64);
  EXPECT_THROW(promote_types(DType::kC64, DType::kF64), Unsupported);  // complex128
  // A 0-d complex64 tensor makes a float32 tensor complex64 (toComplexType), and a bfloat16
  // one has no complex type in PyTorch: the CPU refuses it.
  EXPECT_EQ(result_type({{DType::kF32, P::kDimTensor}, {DType::kC64, P::kZeroDimTensor}}),
            DType::kC64);
  EXPECT_EQ(result_type({{DType::kI32, P::kDimTensor}, {DType::kC64, P::kZeroDimTensor}}),
            DType::kC64);
  EXPECT_THROW(result_type({{DType::kBF16, P::kDimTensor}, {DType::kC64, P::kZeroDimTensor}}),
               Unsupported);
  // A complex64 tensor with a Python float stays complex64.
  EXPECT_EQ(result_type({{DType::kC64, P::kDimTensor}, {DType::kF64, P::kWrappedScalar}}),
            DType::kC64);
}

TEST(LoweringTest, Complex64MulAndAddOnPairsByHand) {
  // (1 + 2i)(3 - 1i) = 5 + 5i; (-2 + 0.5i) * 4 = -8 + 2i (a real other is (4, 0)).
  OpCall call;
  call.args = {tensor_arg(DType::kC64, {2}), tensor_arg(DType::kC64, {2})};
  auto out =
      run("mul.Tensor", call,
          {host(DType::kF32, {2, 2}, {1, 2, -2, 0.5}), host(DType::kF32, {2, 2}, {3, -1, 4, 0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, TensorType(DType::kF32, {2, 2}));
  const double want[] = {5, 5, -8, 2};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].get(i), want[i]);
  EXPECT_EQ(lower_call(*find_lowering("mul.Tensor"), call).complex, std::vector<bool>{true});
  // sub with alpha 2 and a real float32 other: (1 + 2i) - 2 * 3 = -5 + 2i.
  call.args = {tensor_arg(DType::kC64, {1}), tensor_arg(DType::kF32, {1}), scalar_arg(DType::kI64)};
  out = run(
      "sub.Tensor", call,
      {host(DType::kF32, {1, 2}, {1, 2}), host(DType::kF32, {1}, {3}), host(DType::kI64, {}, {2})});
  EXPECT_EQ(out[0].get(0), -5);
  EXPECT_EQ(out[0].get(1), 2);
  // A complex result in place into a float32 tensor is PyTorch's error, left to the CPU.
  call.args = {tensor_arg(DType::kF32, {2}), tensor_arg(DType::kC64, {2})};
  call.out_dtypes = {DType::kF32};
  call.in_place = true;
  EXPECT_THROW(lower_call(*find_lowering("mul_.Tensor"), call), Unsupported);
}

}  // namespace
}  // namespace vtrn::lowering

namespace vtrn::lowering {
namespace {

OpCall collective_call(const std::string& kind, std::vector<std::int64_t> dims, int size) {
  auto text = [](std::string s) {
    ArgSpec a;
    a.kind = ArgKind::kString;
    a.text = std::move(s);
    return a;
  };
  ArgSpec seconds;
  seconds.kind = ArgKind::kFloat;
  seconds.real = 2e-6;
  OpCall call;
  call.args = {tensor_arg(DType::kBF16, std::move(dims)),
               text(kind),
               text("avg"),
               int_arg(size),
               text("7"),
               seconds};
  return call;
}

TEST(LoweringTest, CollectiveIsOneCustomCallOfC10dsResultShape) {
  const OpLowering* e = find_lowering("vtrn::collective");
  ASSERT_NE(e, nullptr);
  // all_gather stacks the ranks' inputs along dim 0; reduce_scatter keeps one rank's slice;
  // all_reduce keeps the shape (c10d's functional all_gather_into_tensor and friends).
  const std::pair<const char*, std::vector<std::int64_t>> cases[] = {
      {"all_gather", {12, 5}}, {"reduce_scatter", {3, 5}}, {"all_reduce", {6, 5}}};
  for (const auto& [kind, want] : cases) {
    const LoweredCall lowered = lower_call(*e, collective_call(kind, {6, 5}, 2));
    const hlo::Block& b = lowered.module.main;
    ASSERT_EQ(b.ops.size(), 1u) << kind;
    EXPECT_EQ(b.ops[0].kind, hlo::OpKind::kCustomCall);
    EXPECT_EQ(b.ops[0].call_target_name, "vtrn.collective");
    EXPECT_EQ(b.ops[0].backend_config,
              std::string("kind=") + kind + ";reduce=avg;group=7;size=2;seconds=2.000000000e-06");
    EXPECT_EQ(b.type(b.results[0]), TensorType(DType::kBF16, want)) << kind;
  }
  EXPECT_THROW(lower_call(*e, collective_call("reduce_scatter", {5, 2}, 2)), Unsupported);
  EXPECT_THROW(lower_call(*e, collective_call("all_gather", {}, 2)), Unsupported);
  EXPECT_THROW(lower_call(*e, collective_call("all_to_all", {4}, 2)), Unsupported);
}

}  // namespace
}  // namespace vtrn::lowering
