// The grouped matmul call (runtime/grouped_mm_call.h, compiler/grouped_mm_call.h): each layout's
// groups against products computed here in float64 (no sgemm is installed in the C++ tests, so
// the call sums in float64 too), offsets clamped as slices clamp them, zeros past the last
// group, the operand checks and the price. Bit parity with the CPU is
// tests/python/test_grouped_mm.py's.
#include "vtrn/runtime/grouped_mm_call.h"

#include <gtest/gtest.h>

#include <vector>

#include "vtrn/compiler/executable.h"
#include "vtrn/compiler/grouped_mm_call.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

hlo::Module grouped_call(const TensorType& a, const TensorType& b, std::int64_t groups,
                         const TensorType& out) {
  Builder bl;
  std::vector<hlo::Value> in{bl.param(a), bl.param(b), bl.param(TensorType(DType::kI32, {groups}))};
  return bl.finish(bl.custom_call(std::string(compiler::kGroupedMmTarget), in, {out}, ""));
}

HostTensor offsets(const std::vector<double>& ends) {
  return HostTensor::from_doubles(TensorType(DType::kI32, {static_cast<std::int64_t>(ends.size())}),
                                  ends);
}

TEST(GroupedMmTest, SlicesClampAsTheCpusDo) {
  const std::int32_t offs[] = {3, 2, 9, 12};  // a decreasing end, then ends past the size 8
  EXPECT_EQ(grouped_mm::group_range(offs, 0, 8).begin, 0);
  EXPECT_EQ(grouped_mm::group_range(offs, 0, 8).end, 3);
  EXPECT_EQ(grouped_mm::group_range(offs, 1, 8).begin, 3);  // [3, 2): empty
  EXPECT_EQ(grouped_mm::group_range(offs, 1, 8).end, 3);
  EXPECT_EQ(grouped_mm::group_range(offs, 2, 8).begin, 2);
  EXPECT_EQ(grouped_mm::group_range(offs, 2, 8).end, 8);
  EXPECT_EQ(grouped_mm::group_range(offs, 3, 8).begin, 8);
  EXPECT_EQ(grouped_mm::group_range(offs, 3, 8).end, 8);
  const std::int32_t negative[] = {-2, 8};  // a slice's -2 is size - 2
  EXPECT_EQ(grouped_mm::group_range(negative, 0, 8).begin, 0);
  EXPECT_EQ(grouped_mm::group_range(negative, 0, 8).end, 6);
  EXPECT_EQ(grouped_mm::group_range(negative, 1, 8).begin, 6);
  EXPECT_EQ(grouped_mm::group_range(negative, 1, 8).end, 8);
}

TEST(GroupedMmTest, EachLayoutMultipliesEachGroupsSlices) {
  const std::int64_t m = 6, k = 5, n = 4, g = 3;
  const std::vector<double> ends{2, 2, 5};  // an empty group; the last row (column) in none
  // Rows by group: out[i] = a[i] b[group of i].
  {
    const TensorType at(DType::kF32, {m, k}), bt(DType::kF32, {g, k, n}), ot(DType::kF32, {m, n});
    const HostTensor a = HostTensor::from_doubles(at, random_values(m * k, -1, 1, 1, DType::kF32));
    const HostTensor b =
        HostTensor::from_doubles(bt, random_values(g * k * n, -1, 1, 2, DType::kF32));
    const HostTensor out = run(grouped_call(at, bt, g, ot), {a, b, offsets(ends)})[0];
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t grp = i < 2 ? 0 : i < 5 ? 2 : -1;
        double want = 0;
        for (std::int64_t p = 0; grp >= 0 && p < k; ++p)
          want += a.get(i * k + p) * b.get((grp * k + p) * n + j);
        EXPECT_NEAR(out.get(i * n + j), want, 1e-5) << i << "," << j;
      }
  }
  // Columns by group: out[:, j] = a[group of j] b[:, j].
  {
    const std::int64_t cols = 6;
    const TensorType at(DType::kF32, {g, m, k}), bt(DType::kF32, {k, cols}),
        ot(DType::kF32, {m, cols});
    const HostTensor a =
        HostTensor::from_doubles(at, random_values(g * m * k, -1, 1, 3, DType::kF32));
    const HostTensor b =
        HostTensor::from_doubles(bt, random_values(k * cols, -1, 1, 4, DType::kF32));
    const HostTensor out = run(grouped_call(at, bt, g, ot), {a, b, offsets(ends)})[0];
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::int64_t grp = j < 2 ? 0 : j < 5 ? 2 : -1;
        double want = 0;
        for (std::int64_t p = 0; grp >= 0 && p < k; ++p)
          want += a.get((grp * m + i) * k + p) * b.get(p * cols + j);
        EXPECT_NEAR(out.get(i * cols + j), want, 1e-5) << i << "," << j;
      }
  }
  // The contraction by group: out[grp] = a[:, range] b[range, :] (k = 6 here).
  {
    const std::int64_t kk = 6;
    const TensorType at(DType::kF32, {m, kk}), bt(DType::kF32, {kk, n}), ot(DType::kF32, {g, m, n});
    const HostTensor a = HostTensor::from_doubles(at, random_values(m * kk, -1, 1, 5, DType::kF32));
    const HostTensor b = HostTensor::from_doubles(bt, random_values(kk * n, -1, 1, 6, DType::kF32));
    const HostTensor out = run(grouped_call(at, bt, g, ot), {a, b, offsets(ends)})[0];
    const std::int64_t begin[] = {0, 2, 2}, end[] = {2, 2, 5};
    for (std::int64_t grp = 0; grp < g; ++grp)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double want = 0;  // an empty range gives 0
          for (std::int64_t p = begin[grp]; p < end[grp]; ++p)
            want += a.get(i * kk + p) * b.get(p * n + j);
          EXPECT_NEAR(out.get((grp * m + i) * n + j), want, 1e-5);
        }
  }
}

TEST(GroupedMmTest, OtherOperandsAreRejectedAndACallIsPriced) {
  const TensorType a(DType::kF32, {64, 32}), b(DType::kF32, {4, 32, 16});
  const hlo::Module ok = grouped_call(a, b, 4, TensorType(DType::kF32, {64, 16}));
  const compiler::GroupedMmShape s = compiler::grouped_mm_shape(ok.main, ok.main.ops.back());
  EXPECT_EQ(s.layout, compiler::GroupedMmLayout::kRowsByGroup);
  EXPECT_EQ(s.m, 64);
  EXPECT_EQ(s.k, 32);
  EXPECT_EQ(s.n, 16);
  const compiler::Executable exe = compiler::compile(ok);
  ASSERT_EQ(exe.kernels.size(), 1u);
  EXPECT_GT(exe.kernels[0].cost.time_s, 0);
  // b's group count differs from the offsets'; a bfloat16 operand.
  const hlo::Module groups = grouped_call(a, b, 3, TensorType(DType::kF32, {64, 16}));
  EXPECT_THROW(compiler::grouped_mm_shape(groups.main, groups.main.ops.back()), hlo::Error);
  const hlo::Module bf16 =
      grouped_call(TensorType(DType::kBF16, {64, 32}), b, 4, TensorType(DType::kF32, {64, 16}));
  try {
    compiler::grouped_mm_shape(bf16.main, bf16.main.ops.back());
    FAIL() << "a bfloat16 operand was accepted";
  } catch (const hlo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes float32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtrn::runtime
