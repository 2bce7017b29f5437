// ATen's order for a float32 row sum (runtime/aten_sum.h), on values chosen so that each
// grouping the order implies gives a sum no other grouping gives, worked out by hand; and a
// reduce marked cascade_sum taking it, in rows, where an unmarked one keeps the executor's tree;
// and vec::reduce_all's order (softmax's row sums), by hand and through a reduce marked vec_sum.
#include "vtrn/runtime/aten_sum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

class AtenSumTest : public ::testing::Test {
 protected:
  void SetUp() override { aten_sum::set_vector_lanes(8); }
  void TearDown() override { aten_sum::set_vector_lanes(8); }
};

constexpr float kBig = 1e8f;  // float spacing 8 there: adding 1 to it is lost

// |n| values of mixed magnitude (every seventh about 1e6 times the rest), whose sums round
// differently in different orders.
std::vector<double> spiky(std::int64_t n) {
  std::vector<double> xs(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = (i % 7 == 0 ? 3e6 : 1.0) * std::sin(static_cast<double>(i));
  return xs;
}

// Shorter than a vector: row_sum over scalars, x[i] to accumulator i % 4, the leftover x[4]
// to the first, then the accumulators in order: (((x0 + x4) + x1) + x2) + x3. Here
// 1e8 - 1e8 first, so the three ones survive; in order left to right they are lost.
TEST_F(AtenSumTest, ScalarRowsGroupByFours) {
  const std::vector<float> x{kBig, 1, 1, 1, -kBig};
  EXPECT_EQ(aten_sum::row_sum(x.data(), 5), 3.0f);
  float in_order = 0;
  for (float v : x) in_order += v;
  EXPECT_EQ(in_order, 0.0f);
}

// 35 = 4 vectors of 8 and a tail of 3: lane l sums x[l], x[8 + l], x[16 + l], x[24 + l]; the
// tail is summed from 0 first, then lanes 0..7 are added to it in order.
TEST_F(AtenSumTest, VectorRowsSumLanesThenTheTailFirst) {
  std::vector<float> x(35, 0.0f);
  x[0] = kBig;    // lane 0, vector 0
  x[24] = -kBig;  // lane 0, vector 3: cancels within lane 0
  x[1] = 1;       // lane 1
  x[32] = kBig;   // tail
  x[33] = -kBig;  // tail: cancels before any lane is added
  x[34] = 1;      // tail
  EXPECT_EQ(aten_sum::row_sum(x.data(), 35), 2.0f);
  // Softmax's 16 lanes (an AVX-512 CPU) leave torch.sum's 8 as they are: torch's AVX-512 build
  // runs the AVX2 sum kernel. 16 lanes would pair x[l] with x[16 + l], keep x[24] in lane 8 and
  // lose the ones: 0.
  aten_sum::set_vector_lanes(16);
  EXPECT_EQ(aten_sum::row_sum(x.data(), 35), 2.0f);
}

// 48 rows of 4 vectors of 8: the accumulators carry into the next level every 16 rows. 1e8 in
// row 15 is carried before the sixteen ones of rows 16..31 are summed (to 16, exactly), which
// join it as one: 1e8 + 16 is a float; -1e8 in row 32 then leaves 16. Left to right each one is
// lost against 1e8 and the sum is 0.
TEST_F(AtenSumTest, LevelsCarryEverySixteenRows) {
  const std::int64_t n = 8 * 4 * 48;
  std::vector<float> x(static_cast<std::size_t>(n), 0.0f);
  x[15 * 32] = kBig;
  for (std::size_t r = 16; r < 32; ++r) x[r * 32] = 1;
  x[32 * 32] = -kBig;
  EXPECT_EQ(aten_sum::row_sum(x.data(), n), 16.0f);
  float in_order = 0;
  for (float v : x) in_order += v;
  EXPECT_EQ(in_order, 0.0f);
}

TEST_F(AtenSumTest, OnlyEightOrSixteenLanes) {
  aten_sum::set_vector_lanes(4);
  EXPECT_EQ(aten_sum::vector_lanes(), 8);
  aten_sum::set_vector_lanes(16);
  EXPECT_EQ(aten_sum::vector_lanes(), 16);
}

// vec::reduce_all's order (softmax's row sums): the lanes fold in halves, so lane 0 meets lane
// 4 first. 1e8 (lane 0) and -1e8 (lane 1) each swallow the one of lanes 4 and 5 before they
// cancel: 0. Left to right, or lanes in order (row_sum), they cancel first and the ones survive.
TEST_F(AtenSumTest, ReduceAllFoldsLanesInHalves) {
  std::vector<float> x(16, 0.0f);
  x[0] = kBig;
  x[1] = -kBig;
  x[4] = 1;
  x[5] = 1;
  EXPECT_EQ(aten_sum::reduce_all_row_sum(x.data(), 16), 0.0f);
  EXPECT_EQ(aten_sum::row_sum(x.data(), 16), 2.0f);
}

// A tail of k elements goes into the first k lanes before the fold: x[16] = -1e8 cancels lane
// 0's 1e8 at once, and the ones of lanes 1 and 2 survive: 2. Left to right they are lost
// against 1e8 before it cancels: 0.
TEST_F(AtenSumTest, ReduceAllAddsTheTailToTheFirstLanes) {
  std::vector<float> x(17, 0.0f);
  x[0] = kBig;
  x[1] = 1;
  x[2] = 1;
  x[16] = -kBig;
  EXPECT_EQ(aten_sum::reduce_all_row_sum(x.data(), 17), 2.0f);
  float in_order = 0;
  for (float v : x) in_order += v;
  EXPECT_EQ(in_order, 0.0f);
  // With 16 lanes x[16] is the tail too, added to lane 0: the same 2.
  aten_sum::set_vector_lanes(16);
  EXPECT_EQ(aten_sum::reduce_all_row_sum(x.data(), 17), 2.0f);
}

// The vector width decides the order: a 12-element row is shorter than 16 lanes and adds in
// order (the seven ones are lost against 1e8 before -1e8 cancels it: 3), while 8 lanes take
// y[0..7] as lanes and add the tail y[8..11] to lanes 0..3 (lanes 0, 2, 2, 2, 1, 1, 1, 1),
// which fold to (0 + 1) + (2 + 1) + (2 + 1) + (2 + 1) in halves: 10.
TEST_F(AtenSumTest, ReduceAllDependsOnTheVectorWidth) {
  const std::vector<float> y{kBig, 1, 1, 1, 1, 1, 1, 1, -kBig, 1, 1, 1};
  EXPECT_EQ(aten_sum::reduce_all_row_sum(y.data(), 12), 10.0f);
  aten_sum::set_vector_lanes(16);
  EXPECT_EQ(aten_sum::reduce_all_row_sum(y.data(), 12), 3.0f);
}

// A reduce marked vec_sum gives reduce_all_row_sum of each row, alone or fused with the exp
// that feeds it (softmax's), including rows past the reduce's in-place chunk (20000).
TEST_F(AtenSumTest, VecSumReduceTakesReduceAllPerRow) {
  for (std::int64_t n : {5, 1000, 20000}) {
    const std::int64_t rows = 3;
    const std::vector<double> xs = spiky(rows * n);
    const TensorType t(DType::kF32, {rows, n});
    const HostTensor input = HostTensor::from_doubles(t, xs);
    const float* in = input.as<float>();
    for (bool exp : {false, true}) {
      Builder b;
      Value x = b.param(t);
      if (exp) x = b.exp(b.mul(x, b.broadcast_to(b.scalar(DType::kF32, 1e-7), {rows, n})));
      hlo::Module m = b.finish(
          {b.reduce(x, b.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd, false, true)});
      const auto out = run(m, {input});
      // The row's values as the loop computes them: the same ops, one module per element kind.
      std::vector<float> row(static_cast<std::size_t>(n));
      for (std::int64_t r = 0; r < rows; ++r) {
        if (exp) {
          Builder e;
          Value v = e.param(TensorType(DType::kF32, {n}));
          v = e.exp(e.mul(v, e.broadcast_to(e.scalar(DType::kF32, 1e-7), {n})));
          const HostTensor one_row = HostTensor::from_doubles(
              TensorType(DType::kF32, {n}),
              std::vector<double>(xs.begin() + r * n, xs.begin() + (r + 1) * n));
          const auto values = run(e.finish({v}), {one_row});
          for (std::int64_t i = 0; i < n; ++i) row[i] = static_cast<float>(values[0].get(i));
        } else {
          row.assign(in + r * n, in + (r + 1) * n);
        }
        EXPECT_EQ(static_cast<float>(out[0].get(r)), aten_sum::reduce_all_row_sum(row.data(), n))
            << "n " << n << ", row " << r << (exp ? ", exp" : "");
      }
    }
  }
}

// A reduce marked cascade_sum gives row_sum of each row, fused with its producer or alone; an
// unmarked one keeps the executor's tree, which rounds the same rows otherwise.
TEST_F(AtenSumTest, MarkedReduceTakesAtensOrderPerRow) {
  const std::int64_t rows = 3, n = 1000;
  const TensorType t(DType::kF32, {rows, n});
  const HostTensor input = HostTensor::from_doubles(t, spiky(rows * n));
  const float* in = input.as<float>();
  int differs = 0;
  for (bool marked : {true, false})
    for (bool squared : {false, true}) {
      Builder b;
      Value x = b.param(t);
      if (squared) x = b.mul(x, x);
      hlo::Module m =
          b.finish({b.reduce(x, b.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd, marked)});
      const auto out = run(m, {input});
      for (std::int64_t r = 0; r < rows; ++r) {
        std::vector<float> row(in + r * n, in + (r + 1) * n);
        if (squared)
          for (float& v : row) v = v * v;
        const float want = aten_sum::row_sum(row.data(), n);
        const auto got = static_cast<float>(out[0].get(r));
        if (marked)
          EXPECT_EQ(got, want) << "row " << r << (squared ? " squared" : "");
        else
          differs += got != want;
      }
    }
  EXPECT_GT(differs, 0) << "the rows do not tell the two orders apart";
}

}  // namespace
}  // namespace vtrn::runtime
