// The collective custom call: its backend_config round trip and refusals, and the compiler's
// cost of the call (the modeled time the config carries), kept through print and parse.
#include "vtrn/compiler/collective_call.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "vtrn/compiler/executable.h"
#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/printer.h"

namespace vtrn::compiler {
namespace {

using hlo::DType;
using hlo::TensorType;

TEST(CollectiveCallTest, ConfigRoundTrip) {
  const CollectiveCall c{"reduce_scatter", "avg", "3", 4, 2.5e-6};
  const std::string text = collective_backend_config(c);
  EXPECT_EQ(text, "kind=reduce_scatter;reduce=avg;group=3;size=4;seconds=2.500000000e-06");
  const std::optional<CollectiveCall> back = parse_collective_config(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->kind, "reduce_scatter");
  EXPECT_EQ(back->reduce, "avg");
  EXPECT_EQ(back->group, "3");
  EXPECT_EQ(back->size, 4);
  EXPECT_DOUBLE_EQ(back->seconds, 2.5e-6);
}

TEST(CollectiveCallTest, RefusesMalformedConfigs) {
  for (const char* bad :
       {"", "kind=all_gather", "kind=broadcast;reduce=sum;group=0;size=2;seconds=0",
        "kind=all_reduce;reduce=sum;group=0;size=0;seconds=0",
        "kind=all_reduce;reduce=sum;group=0;size=2x;seconds=0",
        "kind=all_reduce;reduce=sum;group=0;size=2;seconds=-1",
        "kind=all_reduce;reduce=sum;group=0;size=2;seconds=inf",
        "kind=all_reduce;reduce=sum;group=;size=2;seconds=0", "kind"})
    EXPECT_FALSE(parse_collective_config(bad).has_value()) << bad;
  EXPECT_THROW(collective_backend_config({"all_reduce", "sum", "a;b", 2, 0}),
               std::invalid_argument);
  EXPECT_THROW(collective_backend_config({"all_reduce", "sum", "", 2, 0}), std::invalid_argument);
}

TEST(CollectiveCallTest, CompilerCostsTheCallWithItsModeledTime) {
  hlo::Builder b("tp");
  hlo::Value x = b.param(TensorType(DType::kF32, {8, 16}));
  const std::string config = collective_backend_config({"all_gather", "sum", "0", 4, 3.25e-5});
  hlo::Value y = b.custom_call(std::string(kCollectiveCallTarget), {x},
                               {TensorType(DType::kF32, {32, 16})}, config)[0];
  const hlo::Module m = b.finish({b.mul(y, y)});
  const Executable exe = compile(hlo::parse_module(hlo::print_module(m)));
  double call_s = 0;
  int calls = 0;
  for (const Kernel& k : exe.kernels) {
    const hlo::Op& root = exe.module.main.ops[static_cast<size_t>(k.ops.back())];
    if (root.kind == hlo::OpKind::kCustomCall) {
      call_s = k.cost.time_s;
      ++calls;
    }
  }
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(call_s, 3.25e-5);
  EXPECT_GT(exe.modeled_time_s(), 3.25e-5);  // the multiply costs something too

  hlo::Builder bad("bad");
  hlo::Value p = bad.param(TensorType(DType::kF32, {4}));
  hlo::Value q = bad.custom_call(std::string(kCollectiveCallTarget), {p},
                                 {TensorType(DType::kF32, {4})}, "kind=all_reduce")[0];
  EXPECT_THROW(compile(bad.finish({q})), hlo::Error);
}

}  // namespace
}  // namespace vtrn::compiler
