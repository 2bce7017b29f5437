// The softmax call (runtime/aten_softmax.h, compiler/aten_softmax.h): without an installed
// kernel its formulas against values computed here in float64; with one, the call hands it the
// rows and flags; the config and operand checks. Bit parity with the CPU is
// tests/python/test_softmax_bits.py's.
#include "vtrn/runtime/aten_softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "vtrn/compiler/aten_softmax.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

constexpr std::int64_t kRows = 3, kN = 7;

std::vector<HostTensor> softmax_call(bool log, bool backward, const std::vector<HostTensor>& in) {
  Builder b;
  std::vector<hlo::Value> operands;
  for (const HostTensor& t : in) operands.push_back(b.param(t.type));
  return run(b.finish(b.custom_call(std::string(compiler::kAtenSoftmaxTarget), operands,
                                    {in[0].type}, compiler::aten_softmax_config({log, backward}))),
             in);
}

TEST(AtenSoftmaxTest, WithoutAnInstalledKernelTheFormulasRun) {
  aten_softmax::install(nullptr);
  const TensorType t(DType::kF32, {kRows, kN});
  const std::vector<double> xs = random_values(kRows * kN, -3, 3, 31, DType::kF32);
  const std::vector<double> gs = random_values(kRows * kN, -1, 1, 32, DType::kF32);
  const HostTensor x = HostTensor::from_doubles(t, xs), g = HostTensor::from_doubles(t, gs);
  for (bool log : {false, true}) {
    const HostTensor y = softmax_call(log, false, {x})[0];
    const HostTensor gi = softmax_call(log, true, {g, y})[0];
    for (std::int64_t r = 0; r < kRows; ++r) {
      double sum = 0;
      for (std::int64_t j = 0; j < kN; ++j) sum += std::exp(xs[r * kN + j]);
      double dot = 0;
      for (std::int64_t j = 0; j < kN; ++j) {
        const double p = std::exp(xs[r * kN + j]) / sum;
        EXPECT_NEAR(y.get(r * kN + j), log ? std::log(p) : p, 1e-6);
        dot += log ? gs[r * kN + j] : gs[r * kN + j] * p;
      }
      for (std::int64_t j = 0; j < kN; ++j) {
        const double p = std::exp(xs[r * kN + j]) / sum;
        const double want = log ? gs[r * kN + j] - p * dot : p * (gs[r * kN + j] - dot);
        EXPECT_NEAR(gi.get(r * kN + j), want, 1e-5);
      }
    }
  }
}

TEST(AtenSoftmaxTest, AnInstalledKernelGetsTheRowsAndFlags) {
  static aten_softmax::Call seen;
  aten_softmax::install([](const aten_softmax::Call& c) {
    seen = c;
    for (std::int64_t i = 0; i < c.rows * c.n; ++i) c.out[i] = 5;
  });
  const TensorType t(DType::kF32, {kRows, kN});
  const HostTensor x =
      HostTensor::from_doubles(t, random_values(kRows * kN, -1, 1, 33, DType::kF32));
  const HostTensor out = softmax_call(true, true, {x, x})[0];
  EXPECT_TRUE(seen.log);
  EXPECT_TRUE(seen.backward);
  EXPECT_EQ(seen.rows, kRows);
  EXPECT_EQ(seen.n, kN);
  EXPECT_GE(seen.threads, 1);
  EXPECT_EQ(out.get(0), 5.0);
  aten_softmax::install(nullptr);
}

TEST(AtenSoftmaxTest, OtherConfigsAndOperandsAreRejected) {
  for (const char* bad : {"", "log=1", "log=1;backward=2", "log=0;backward=0;"})
    EXPECT_FALSE(compiler::parse_aten_softmax_config(bad).has_value()) << bad;
  Builder b;
  const TensorType t(DType::kF32, {kRows, kN});
  const hlo::Module m =
      b.finish(b.custom_call(std::string(compiler::kAtenSoftmaxTarget), {b.param(t)}, {t},
                             compiler::aten_softmax_config({false, true})));
  try {
    compiler::aten_softmax_shape(m.main, m.main.ops.back());
    FAIL() << "a backward call with one operand was accepted";
  } catch (const hlo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes (grad_output, output)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vtrn::runtime
