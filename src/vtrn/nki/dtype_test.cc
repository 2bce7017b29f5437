// Conversions against values worked out by hand from the formats' bit layouts.
#include "vtrn/nki/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace vtrn::nki {
namespace {

double round_trip(DType d, double v) {
  unsigned char buf[4];
  store_element(d, buf, v);
  return load_element(d, buf);
}

TEST(DTypeTest, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties to the even mantissa (1.0).
  EXPECT_EQ(round_trip(DType::kBFloat16, 1.00390625), 1.0);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to 1 + 2^-6.
  EXPECT_EQ(round_trip(DType::kBFloat16, 1.01171875), 1.015625);
  EXPECT_TRUE(std::isnan(round_trip(DType::kBFloat16, NAN)));
}

TEST(DTypeTest, Float16) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(1e6f), 0x7c00);  // overflows to inf
  EXPECT_EQ(round_trip(DType::kFloat16, 5.960464477539063e-08), 5.960464477539063e-08);  // 2^-24
  EXPECT_EQ(round_trip(DType::kFloat16, 0.1), 0.0999755859375);
}

TEST(DTypeTest, Float8Formats) {
  EXPECT_EQ(round_trip(DType::kFloat8E4M3FN, 448), 448);  // the largest finite e4m3fn
  EXPECT_TRUE(std::isnan(round_trip(DType::kFloat8E4M3FN, 1000)));
  EXPECT_EQ(round_trip(DType::kFloat8E5M2, 57344), 57344);
  EXPECT_EQ(round_trip(DType::kFloat8E4M3, 1.0625), 1.0);  // halfway 1 and 1.125: even
  EXPECT_EQ(round_trip(DType::kFloat8E4M3FN, -0.3), -0.3125);
}

TEST(DTypeTest, IntegersTruncateAndSaturate) {
  EXPECT_EQ(round_trip(DType::kInt8, 300), 127);
  EXPECT_EQ(round_trip(DType::kInt8, -2.7), -2);
  EXPECT_EQ(round_trip(DType::kUInt8, -5), 0);
  EXPECT_EQ(round_trip(DType::kInt32, 2147483647.0), 2147483647.0);
  EXPECT_EQ(round_trip(DType::kBool, 0.5), 1);
}

TEST(DTypeTest, SentinelsAreNanAndFour) {
  std::uint16_t b[3];
  fill_sentinel(DType::kBFloat16, b, 3);
  EXPECT_TRUE(std::isnan(bf16_to_float(b[2])));
  std::int32_t i[2];
  fill_sentinel(DType::kInt32, i, 2);
  EXPECT_EQ(i[0], 4);
  EXPECT_EQ(i[1], 4);
}

TEST(DTypeTest, Names) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::kBFloat16);
  EXPECT_EQ(dtype_name(DType::kFloat8E4M3FN), "float8_e4m3fn");
  EXPECT_THROW(parse_dtype("float64"), std::invalid_argument);
}

}  // namespace
}  // namespace vtrn::nki
