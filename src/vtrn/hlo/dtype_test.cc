// bfloat16 / float16 rounding against hand-computed bit patterns and a double-precision
// nearest-value search.
#include "vtrn/hlo/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace vtrn::hlo {
namespace {

TEST(DTypeTest, NamesAndSizes) {
  EXPECT_EQ(dtype_name(DType::kPred), "i1");
  EXPECT_EQ(dtype_name(DType::kU8), "ui8");
  EXPECT_EQ(dtype_name(DType::kC64), "complex<f32>");
  EXPECT_EQ(dtype_from_name("bf16"), DType::kBF16);
  EXPECT_EQ(dtype_from_name("f8E4M3FN"), std::nullopt);
  EXPECT_EQ(dtype_size(DType::kBF16), 2);
  EXPECT_EQ(dtype_size(DType::kC64), 8);
  EXPECT_EQ(dtype_size(DType::kPred), 1);
}

TEST(DTypeTest, Bf16HandValues) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(bits_float(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(bits_float(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(bits_float(0x3F808001u)), 0x3F81);  // above half
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_bf16(bits_float(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds to inf
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
}

TEST(DTypeTest, Bf16MatchesNearestSearch) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits(0, 0xFFFFFFFFu);
  for (int i = 0; i < 200000; ++i) {
    const float f = bits_float(bits(rng));
    if (!std::isfinite(f)) continue;
    const std::uint32_t lo = float_bits(f) & 0xFFFF0000u;
    const double a = bits_float(lo), b = bits_float(lo + 0x10000u);
    const double da = std::fabs(static_cast<double>(f) - a),
                 db = std::fabs(static_cast<double>(f) - b);
    if (!std::isfinite(b)) continue;  // next value up is inf: covered by the hand values
    std::uint16_t expect;
    if (da < db)
      expect = static_cast<std::uint16_t>(lo >> 16);
    else if (db < da)
      expect = static_cast<std::uint16_t>((lo >> 16) + 1);
    else
      expect = static_cast<std::uint16_t>(((lo >> 16) & 1) ? (lo >> 16) + 1 : lo >> 16);
    ASSERT_EQ(f32_to_bf16(f), expect) << std::hexfloat << f;
  }
}

TEST(DTypeTest, F16HandValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);               // tie to even: inf
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(f32_to_f16(0.1f), 0x2E66);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
}

TEST(DTypeTest, F16RoundTripsEveryValue) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = f16_to_f32(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << h;
  }
}

TEST(DTypeTest, F16MatchesNearestSearch) {
  // Every f16 value and the midpoints between neighbours: the midpoint rounds to the even one.
  for (std::uint32_t h = 0; h < 0x7BFFu; ++h) {
    const double a = f16_to_f32(static_cast<std::uint16_t>(h)),
                 b = f16_to_f32(static_cast<std::uint16_t>(h + 1));
    const float mid = static_cast<float>((a + b) / 2);  // exact in f32
    const std::uint16_t even =
        (h & 1) ? static_cast<std::uint16_t>(h + 1) : static_cast<std::uint16_t>(h);
    ASSERT_EQ(f32_to_f16(mid), even) << h;
    ASSERT_EQ(f32_to_f16(std::nextafter(mid, 1e9f)), h + 1) << h;
    ASSERT_EQ(f32_to_f16(std::nextafter(mid, -1e9f)), h) << h;
  }
}

}  // namespace
}  // namespace vtrn::hlo
