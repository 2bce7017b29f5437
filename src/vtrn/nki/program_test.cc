// The hardware rules a traced program is checked against, with the AWS simulator's and the
// NKI compiler's error texts.
#include "vtrn/nki/program.h"

#include <gtest/gtest.h>

#include "vtrn/nki/test_util.h"

namespace vtrn::nki {
namespace {

using namespace testing;

TEST(ProgramTest, PartitionDimensionOver128IsTheSimulatorsAssertion) {
  // The simulator guide's example: a (256, 512) SBUF tile used by tensor_tensor.
  Program p("trn2");
  const auto big = tensor(p, "tile", Memory::kSbuf, DType::kFloat32, {256, 512});
  const auto out = tensor(p, "out", Memory::kSbuf, DType::kFloat32, {256, 512});
  Instruction i = inst(whole(p, out), {whole(p, big), whole(p, big)}, "tensor_tensor");
  i.alu0 = AluOp::kAdd;
  EXPECT_EQ(error_of([&] { p.tensor_tensor(i); }),
            "tensor_tensor data1 partition dimension 256 exceeds maximum 128");
  EXPECT_THROW(p.tensor_tensor(i), ValidationError);
}

TEST(ProgramTest, MatmulLimits) {
  Program p("trn2");
  const auto st = tensor(p, "st", Memory::kSbuf, DType::kBFloat16, {128, 256});
  const auto mv = tensor(p, "mv", Memory::kSbuf, DType::kBFloat16, {128, 1024});
  const auto ps = tensor(p, "ps", Memory::kPsum, DType::kFloat32, {128, 512});
  const auto sb = tensor(p, "sb", Memory::kSbuf, DType::kFloat32, {128, 512});
  EXPECT_EQ(
      error_of([&] {
        p.matmul(inst(whole(p, ps), {whole(p, st), block(p, mv, 0, 128, 0, 512)}, "nc_matmul"));
      }),
      "nc_matmul stationary free dimension 256 exceeds maximum 128");
  EXPECT_EQ(error_of([&] {
              p.matmul(inst(block(p, ps, 0, 128, 0, 512),
                            {block(p, st, 0, 128, 0, 128), whole(p, mv)}, "nc_matmul"));
            }),
            "nc_matmul moving free dimension 1024 exceeds maximum 512");
  EXPECT_EQ(
      error_of([&] {
        p.matmul(inst(block(p, sb, 0, 128, 0, 512),
                      {block(p, st, 0, 128, 0, 128), block(p, mv, 0, 128, 0, 512)}, "nc_matmul"));
      }),
      "Expected operand 'dst' of 'nc_matmul' to be in address space 'psum', but got a tile in "
      "'sbuf' instead.");
  EXPECT_EQ(
      error_of([&] {
        p.matmul(inst(block(p, ps, 0, 128, 0, 512), {block(p, st, 0, 128, 0, 128), whole(p, ps)},
                      "nc_matmul"));
      }),
      "Expected operand 'moving' of 'nc_matmul' to be in address space 'sbuf', but got a tile "
      "in 'psum' instead.");
  // A full-size matmul passes.
  EXPECT_NO_THROW(p.matmul(inst(
      whole(p, ps), {block(p, st, 0, 128, 0, 128), block(p, mv, 0, 128, 0, 512)}, "nc_matmul")));
}

TEST(ProgramTest, MatmulMovingLimitHoldsOnTrn3Too) {
  // 1024 fp32 columns would be two PSUM banks.
  Program p("trn3");
  const auto st = tensor(p, "st", Memory::kSbuf, DType::kBFloat16, {128, 128});
  const auto mv = tensor(p, "mv", Memory::kSbuf, DType::kBFloat16, {128, 1024});
  const auto ps = tensor(p, "ps", Memory::kPsum, DType::kFloat32, {128, 1024});
  EXPECT_NE(error_of([&] {
              p.matmul(inst(whole(p, ps), {whole(p, st), whole(p, mv)}, "nc_matmul"));
            }),
            "");
}

TEST(ProgramTest, ComputeEnginesCannotReadHbm) {
  Program p("trn2");
  const auto h = tensor(p, "x", Memory::kHbm, DType::kFloat32, {4, 4});
  const auto s = tensor(p, "y", Memory::kSbuf, DType::kFloat32, {4, 4});
  Instruction i = inst(whole(p, s), {whole(p, h)}, "exp");
  i.func = ActFunc::kExp;
  EXPECT_EQ(error_of([&] { p.activation(i); }),
            "Expected operand 'data' of 'exp' to be in address space 'psum|sbuf', but got a tile "
            "in 'hbm' instead.");
}

TEST(ProgramTest, PartitionMismatchNamesBothOperands) {
  Program p("trn2");
  const auto x = tensor(p, "x", Memory::kSbuf, DType::kFloat32, {128, 512});
  const auto y = tensor(p, "y", Memory::kSbuf, DType::kFloat32, {1, 512});
  Instruction i = inst(whole(p, x), {whole(p, x), whole(p, y)}, "tensor_tensor");
  i.alu0 = AluOp::kAdd;
  EXPECT_EQ(error_of([&] { p.tensor_tensor(i); }),
            "number of partitions (dimension 0 size of a tile) mismatch in parameters "
            "(data1[128, 512], data2[1, 512]) of 'tensor_tensor'");
}

TEST(ProgramTest, TensorEngineTransposeIsLimitedTo128) {
  Program p("trn2");
  const auto x = tensor(p, "x", Memory::kSbuf, DType::kFloat32, {128, 512});
  const auto t = tensor(p, "t", Memory::kPsum, DType::kFloat32, {512, 128});
  Instruction i = inst(whole(p, t), {whole(p, x)}, "transpose");
  i.engines = engine_bit(Engine::kTensor);
  EXPECT_EQ(error_of([&] { p.transpose(i); }),
            "size of dimension 1 in 'data[128, 512]' of 'transpose' exceed architecture "
            "limitation of 128.");
}

TEST(ProgramTest, GpSimdCannotTouchPsum) {
  Program p("trn2");
  const auto ps = tensor(p, "ps", Memory::kPsum, DType::kFloat32, {128, 8});
  const auto sb = tensor(p, "sb", Memory::kSbuf, DType::kFloat32, {128, 8});
  Instruction i = inst(whole(p, sb), {whole(p, ps)}, "tensor_copy");
  i.engines = engine_bit(Engine::kGpSimd);
  EXPECT_NE(error_of([&] { p.tensor_copy(i); }).find("cannot access PSUM"), std::string::npos);
  // Left to the scheduler, the copy avoids GpSimd.
  i.engines = 0;
  const std::size_t k = p.tensor_copy(i);
  EXPECT_FALSE(p.instructions()[k].engines & engine_bit(Engine::kGpSimd));
}

TEST(ProgramTest, AffineRangeIterationsMustNotWriteTheSameLocation) {
  Program p("trn2");
  const auto a = tensor(p, "a", Memory::kSbuf, DType::kFloat32, {128, 4, 512});
  Access first = whole(p, a);
  first.dims = {{2048, 128}, {1, 512}};  // a[:, 0, :]
  for (int it = 0; it < 2; ++it) {
    p.enter_iteration(7, it, "k.py:3");
    Instruction i = inst(first, {}, "memset");
    if (it == 1) {
      EXPECT_EQ(error_of([&] { p.memset(i); }),
                "Unexpected output dependencies: iterations 0 and 1 of the nl.affine_range loop "
                "at k.py:3 both write `a` (memset at test.py:2); index the destination with the "
                "loop variable, or use nl.sequential_range if the iterations must run in order");
    } else {
      p.memset(i);
    }
    p.exit_iteration();
  }
  // Writing a[:, i, :] in iteration i is fine.
  for (int it = 0; it < 4; ++it) {
    p.enter_iteration(8, it, "k.py:9");
    Access slot = first;
    slot.offset = it * 512;
    EXPECT_NO_THROW(p.memset(inst(slot, {}, "memset")));
    p.exit_iteration();
  }
}

TEST(ProgramTest, MatmulAccumulationInAffineRangeIsAllowed) {
  Program p("trn2");
  const auto st = tensor(p, "st", Memory::kSbuf, DType::kBFloat16, {128, 128});
  const auto mv = tensor(p, "mv", Memory::kSbuf, DType::kBFloat16, {128, 512});
  const auto ps = tensor(p, "ps", Memory::kPsum, DType::kFloat32, {128, 512});
  for (int k = 0; k < 3; ++k) {
    p.enter_iteration(1, k, "k.py:5");
    EXPECT_NO_THROW(p.matmul(inst(whole(p, ps), {whole(p, st), whole(p, mv)}, "nc_matmul")));
    p.exit_iteration();
  }
}

TEST(ProgramTest, OutOfBoundsAccessIsRefusedUnlessMasked) {
  Program p("trn2");
  const auto h = tensor(p, "x", Memory::kHbm, DType::kFloat32, {100, 8});
  const auto s = tensor(p, "s", Memory::kSbuf, DType::kFloat32, {128, 8});
  Instruction load = inst(whole(p, s), {block(p, h, 0, 128, 0, 8)}, "load");
  EXPECT_NE(error_of([&] { p.dma_copy(load); }).find("which has 800 elements"), std::string::npos);
  load.mask.assign(128 * 8, 0);
  std::fill(load.mask.begin(), load.mask.begin() + 100 * 8, 1);
  EXPECT_NO_THROW(p.dma_copy(load));
}

TEST(ProgramTest, RetargetMovesTheLastResult) {
  Program p("trn2");
  const auto x = tensor(p, "x", Memory::kSbuf, DType::kFloat32, {128, 64});
  const auto tmp = tensor(p, "tmp", Memory::kSbuf, DType::kFloat32, {128, 64});
  const auto big = tensor(p, "big", Memory::kSbuf, DType::kFloat32, {128, 256});
  Instruction i = inst(whole(p, tmp), {whole(p, x)}, "exp");
  i.func = ActFunc::kExp;
  const std::size_t k = p.activation(i);
  p.retarget(k, block(p, big, 0, 128, 64, 64), Accumulate::kOverwrite);
  EXPECT_EQ(p.instructions()[k].dst.tensor, big);
  EXPECT_EQ(p.instructions()[k].dst.offset, 64);
  EXPECT_NE(error_of([&] {
              p.retarget(k, block(p, big, 0, 128, 0, 32), Accumulate::kOverwrite);
            }).find("Illegal assignment destination shape"),
            std::string::npos);
}

}  // namespace
}  // namespace vtrn::nki

namespace vtrn::nki {
namespace {

using namespace testing;

TEST(ProgramTest, MaskedRowsPastTheEndDoNotCountAsWrites) {
  // Two affine iterations store 128-row tiles into a 130-row tensor; the second is masked to
  // 2 rows, so the iterations write disjoint rows.
  Program p("trn2");
  const auto out = tensor(p, "out", Memory::kHbm, DType::kFloat32, {130, 4});
  const auto t = tensor(p, "t", Memory::kSbuf, DType::kFloat32, {128, 4});
  p.memset(inst(whole(p, t), {}, "memset"));
  for (int it = 0; it < 2; ++it) {
    p.enter_iteration(3, it, "k.py:1");
    Instruction store = inst(block(p, out, it * 128, 128, 0, 4), {whole(p, t)}, "store");
    if (it == 1) {
      store.mask.assign(128 * 4, 0);
      std::fill(store.mask.begin(), store.mask.begin() + 2 * 4, 1);
    }
    EXPECT_NO_THROW(p.dma_copy(store));
    p.exit_iteration();
  }
}

}  // namespace
}  // namespace vtrn::nki
