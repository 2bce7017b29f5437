// Kernel formation, cost annotation and the binary format (round trip, corruption, version,
// forged kernel tables and length fields).
#include "vtrn/compiler/executable.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/printer.h"

namespace vtrn::compiler {
namespace {

using hlo::Builder;
using hlo::DType;
using hlo::TensorType;
using hlo::Value;

// With |dot_alone| the dot's result is returned too, so it stays a kernel of its own.
hlo::Module mlp(bool dot_alone = false) {
  Builder b("mlp");
  Value x = b.param(TensorType(DType::kF32, {128, 256}));
  Value w = b.param(TensorType(DType::kF32, {256, 512}));
  Value bias = b.param(TensorType(DType::kF32, {512}));
  Value h = b.matmul(x, w);
  Value y = b.max(b.add(h, b.broadcast_in_dim(bias, {128, 512}, {1})),
                  b.broadcast_in_dim(b.scalar(DType::kF32, 0), {128, 512}, {}));
  Value s = b.reduce(b.mul(y, y), b.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);
  if (dot_alone) return b.finish({y, s, h});
  return b.finish({y, s});
}

TEST(ExecutableTest, KernelsAndCosts) {
  Executable exe = compile(mlp());
  std::vector<std::string> names;
  for (const Kernel& k : exe.kernels)
    if (k.kind != KernelKind::kConstant) names.push_back(k.name);
  // The dot with its bias+relu epilogue; square+reduce fused.
  ASSERT_EQ(names, (std::vector<std::string>{"fusion.0", "fusion.1"}));
  const Kernel* dot = nullptr;
  for (const Kernel& k : exe.kernels)
    if (k.name == "fusion.0") dot = &k;
  ASSERT_TRUE(dot);
  // dot_general, the bias's broadcast, add, maximum (the zero is a folded splat constant).
  ASSERT_EQ(dot->ops.size(), 4u);
  // 2*128*512*256 = 33554432 FLOP at 20 TFLOPS (FP32), array fully used: 1.68 us. Bytes: x, w,
  // bias, the folded zero constant (128x512, as every constant operand is charged) and y,
  // (128*256 + 256*512 + 512 + 128*512 + 128*512) * 4 = 1181696 at 362.5 GB/s: 3.26 us (the
  // dot's result never leaves the core), so it is DMA-bound.
  EXPECT_DOUBLE_EQ(dot->cost.flops, 33554432.0);
  EXPECT_NEAR(dot->cost.tensor_s, 33554432.0 / 20e12, 1e-15);
  EXPECT_NEAR(dot->cost.vector_s, 2 * 65536 / 1e12, 1e-15);
  EXPECT_NEAR(dot->cost.dma_s, 1181696.0 / 362.5e9, 1e-15);
  EXPECT_EQ(dot->cost.engine, cost::Engine::kDma);
  EXPECT_NEAR(dot->cost.time_s, 1.3e-6 + 1181696.0 / 362.5e9, 1e-15);
  EXPECT_GT(exe.modeled_time_s(), 0);
}

TEST(ExecutableTest, OptionsKey) {
  CompileOptions o;
  EXPECT_EQ(o.key(), "O2 fusion=1");
  o.fusion = false;
  o.opt_level = 0;
  EXPECT_EQ(o.key(), "O0 fusion=0");
}

TEST(ExecutableTest, SerializeRoundTrip) {
  Executable exe = compile(mlp());
  const std::vector<std::uint8_t> bytes = serialize(exe);
  Executable back = deserialize(bytes);
  EXPECT_EQ(hlo::print_module(back.module), hlo::print_module(exe.module));
  ASSERT_EQ(back.kernels.size(), exe.kernels.size());
  for (std::size_t i = 0; i < exe.kernels.size(); ++i) {
    EXPECT_EQ(back.kernels[i].name, exe.kernels[i].name);
    EXPECT_EQ(back.kernels[i].ops, exe.kernels[i].ops);
    EXPECT_EQ(back.kernels[i].cost.time_s, exe.kernels[i].cost.time_s);
  }
  EXPECT_EQ(serialize(back), bytes);
}

TEST(ExecutableTest, CorruptionIsDetected) {
  const std::vector<std::uint8_t> bytes = serialize(compile(mlp()));
  // Every truncation fails cleanly.
  for (std::size_t n = 0; n < bytes.size(); n += 7)
    EXPECT_THROW(deserialize(std::span(bytes).first(n)), FormatError);
  // A flipped payload byte fails the checksum.
  std::vector<std::uint8_t> bad = bytes;
  bad[bad.size() / 2] ^= 0x40;
  try {
    deserialize(bad);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos);
  }
  // Another format version is refused with the version named.
  bad = bytes;
  bad[8] = 99;
  try {
    deserialize(bad);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("version 99"), std::string::npos);
  }
}

// A payload wrapped in a valid header (magic, version, size, checksum), as a forger would.
std::vector<std::uint8_t> sealed(const std::vector<std::uint8_t>& payload) {
  std::vector<std::uint8_t> out = {'V', 'T', 'R', 'N', 'N', 'E', 'F', 'F'};
  auto put = [&](auto v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  };
  put(kFormatVersion);
  put(std::uint32_t{32});
  put(std::uint64_t{payload.size()});
  put(fnv1a64(payload.data(), payload.size()));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::string load_error(const std::vector<std::uint8_t>& bytes) {
  try {
    deserialize(bytes);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(ExecutableTest, KernelTableMustBeTheModules) {
  const Executable good = compile(mlp(true));
  ASSERT_EQ(load_error(serialize(good)), "(loaded)");
  int dot = -1;
  for (std::size_t i = 0; i < good.kernels.size(); ++i)
    if (good.kernels[i].name == "dot_general.0") dot = static_cast<int>(i);
  ASSERT_GE(dot, 0);
  // Each forged table has a valid checksum; the loader must still refuse it, naming why.
  const std::vector<std::pair<std::string, std::function<void(Executable&)>>> forgeries = {
      {"unknown kind", [](Executable& e) { e.kernels[0].kind = static_cast<KernelKind>(9); }},
      {"unknown engine",
       [](Executable& e) { e.kernels[0].cost.engine = static_cast<cost::Engine>(7); }},
      {"bad modeled cost", [](Executable& e) { e.kernels[0].cost.time_s = std::nan(""); }},
      {"bad modeled cost", [](Executable& e) { e.kernels[0].cost.dma_s = -1; }},
      {"bad modeled cost",
       [](Executable& e) { e.kernels[0].cost.flops = std::numeric_limits<double>::infinity(); }},
      // A dot_general marked as a fused loop would run through the fused-loop interpreter.
      {"not the kernel its module forms",
       [dot](Executable& e) { e.kernels[dot].kind = KernelKind::kFused; }},
      {"not the kernel its module forms",
       [dot](Executable& e) { e.kernels[dot].ops = {e.kernels[dot].ops[0] + 1}; }},
      {"not the kernel its module forms",
       [](Executable& e) { std::swap(e.kernels[0], e.kernels[1]); }},
      {"kernels, its module forms", [](Executable& e) { e.kernels.pop_back(); }},
      {"kernels, its module forms", [](Executable& e) { e.kernels.push_back(e.kernels[0]); }},
      {"kernels for",
       [](Executable& e) {
         const Kernel k = e.kernels[0];
         e.kernels.assign(e.module.main.ops.size() + 1, k);
       }},
  };
  for (const auto& [want, forge] : forgeries) {
    Executable bad = good;
    forge(bad);
    const std::string err = load_error(serialize(bad));
    EXPECT_NE(err.find(want), std::string::npos) << want << ": " << err;
  }
}

TEST(ExecutableTest, LengthFieldsNeverDriveAllocation) {
  // A payload whose first string claims 2^64-1 bytes, and one whose module text claims 2^40:
  // both fail as truncated instead of allocating what the field says.
  for (std::uint64_t claimed : {~std::uint64_t{0}, std::uint64_t{1} << 40}) {
    std::vector<std::uint8_t> payload(8);
    std::memcpy(payload.data(), &claimed, 8);
    payload.resize(64, 'x');
    EXPECT_NE(load_error(sealed(payload)).find("truncated"), std::string::npos) << claimed;
  }
  // The header's payload size must match the bytes that are there.
  std::vector<std::uint8_t> bytes = serialize(compile(mlp()));
  const std::uint64_t huge = std::uint64_t{1} << 62;
  std::memcpy(bytes.data() + 16, &huge, 8);
  EXPECT_NE(load_error(bytes).find("the header says"), std::string::npos);
}

TEST(ExecutableTest, Fnv1aKnownValues) {
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}

}  // namespace
}  // namespace vtrn::compiler

namespace vtrn::compiler {
namespace {

// Two bfloat16 ops as the eager runtime composes them into one group: a = bf16(x*x), then
// b = bf16(x*x + x) reading the float32 product (the group keeps intermediates in float32),
// with both a and b returned. Then the same ops one per module, each reading and writing bf16.
constexpr std::int64_t kChainN = 1024 * 1024;

hlo::Module chain_group() {
  Builder b("group");
  Value x = b.param(TensorType(DType::kBF16, {1024, 1024}));
  Value xf = b.convert(x, DType::kF32);
  Value m = b.mul(xf, xf);
  Value a = b.convert(m, DType::kBF16);
  Value s = b.add(m, xf);
  return b.finish({a, b.convert(s, DType::kBF16)});
}

hlo::Module chain_op1() {
  Builder b("op1");
  Value x = b.param(TensorType(DType::kBF16, {1024, 1024}));
  Value xf = b.convert(x, DType::kF32);
  return b.finish({b.convert(b.mul(xf, xf), DType::kBF16)});
}

hlo::Module chain_op2() {
  Builder b("op2");
  Value a = b.param(TensorType(DType::kBF16, {1024, 1024}));
  Value x = b.param(TensorType(DType::kBF16, {1024, 1024}));
  Value s = b.add(b.convert(a, DType::kF32), b.convert(x, DType::kF32));
  return b.finish({b.convert(s, DType::kBF16)});
}

TEST(ExecutableTest, FusedChainIsNeverSlowerThanItsOpsRunSeparately) {
  const Executable group = compile(chain_group());
  // One kernel: the float32 product read by the second op and written (rounded) as |a| stays
  // in the loop; the kernel writes both results (multi-output fusion).
  ASSERT_EQ(group.kernels.size(), 1u);
  EXPECT_EQ(group.kernels[0].kind, KernelKind::kFused);
  // By hand, memory-bound at 362.5 GB/s per core (2.9 TB/s over 8 cores) plus one 1.3 us DMA
  // start per kernel. Fused: read x, write a and b, 2 bytes each: 6 N bytes. Separately: op 1
  // reads x and writes a (4 N), op 2 reads a and x and writes b (6 N).
  const double bw = 2.9e12 / 8;
  const double n = static_cast<double>(kChainN);
  EXPECT_NEAR(group.modeled_time_s(), 1.3e-6 + 6 * n / bw, 1e-12);
  const double separate =
      compile(chain_op1()).modeled_time_s() + compile(chain_op2()).modeled_time_s();
  EXPECT_NEAR(separate, 2 * 1.3e-6 + 10 * n / bw, 1e-12);
  EXPECT_LE(group.modeled_time_s(), separate);
}

TEST(ExecutableTest, OutputsUsedBeforeTheRootStayOutOfTheKernel) {
  // y = x + 1 is read by a dot that runs before z = y * d: fusing y into z's kernel would
  // compute it too late, so it stays a kernel of its own. (d is returned, so the dot is not
  // z's epilogue head.)
  Builder b("order");
  Value x = b.param(TensorType(DType::kF32, {64, 64}));
  Value one = b.broadcast_in_dim(b.scalar(DType::kF32, 1), {64, 64}, {});
  Value y = b.add(x, one);
  Value d = b.matmul(y, x);
  Value z = b.mul(y, d);
  const Executable exe = compile(b.finish({z, d}));
  std::vector<std::string> names;
  for (const Kernel& k : exe.kernels)
    if (k.kind != KernelKind::kConstant) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fusion.0", "dot_general.0", "fusion.1"}));
}

}  // namespace
}  // namespace vtrn::compiler
