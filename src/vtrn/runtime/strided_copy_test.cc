#include "vtrn/runtime/strided_copy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include <algorithm>

namespace vtrn::runtime {
namespace {

using Dims = std::vector<std::int64_t>;

// The definition, one element at a time: the oracle for the fast paths.
void reference_copy(std::uint8_t* dst, const StridedView& dv, const std::uint8_t* src,
                    const StridedView& sv, const Dims& shape, int es) {
  std::int64_t n = 1;
  for (std::int64_t s : shape) n *= s;
  Dims idx(shape.size(), 0);
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t d = dv.base, s = sv.base;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      d += idx[k] * dv.strides[k];
      s += idx[k] * sv.strides[k];
    }
    std::memcpy(dst + d * es, src + s * es, static_cast<std::size_t>(es));
    for (std::size_t k = shape.size(); k-- > 0;) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
}

Dims row_major(const Dims& shape) {
  Dims s(shape.size(), 1);
  for (std::size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

// A source view of |shape| over a buffer: the dims permuted by |perm|, some broadcast (stride
// 0), some reversed, and the returned element count the buffer needs.
struct Source {
  StridedView view;
  std::int64_t elements;
};

Source random_source(const Dims& shape, std::mt19937& rng) {
  const std::size_t r = shape.size();
  std::vector<std::size_t> perm(r);
  for (std::size_t k = 0; k < r; ++k) perm[k] = k;
  std::shuffle(perm.begin(), perm.end(), rng);
  Dims stored(r);
  for (std::size_t k = 0; k < r; ++k) stored[k] = shape[perm[k]];
  const Dims st = row_major(stored);
  Source s{{0, Dims(r, 0)}, 1};
  for (std::int64_t n : stored) s.elements *= n;
  for (std::size_t k = 0; k < r; ++k) {
    const std::size_t dim = perm[k];
    const int kind = static_cast<int>(rng() % 6);
    if (kind == 0) continue;  // broadcast
    if (kind == 1) {          // reversed
      s.view.strides[dim] = -st[k];
      s.view.base += (shape[dim] - 1) * st[k];
    } else {
      s.view.strides[dim] = st[k];
    }
  }
  return s;
}

TEST(StridedCopyTest, MatchesTheElementwiseDefinitionOnRandomViews) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const int rank = 1 + static_cast<int>(rng() % 5);
    Dims shape;
    // Up to 40 per dim, at most 40^3 elements in all.
    const auto most = static_cast<std::uint32_t>(rank <= 3 ? 40 : rank == 4 ? 15 : 8);
    for (int k = 0; k < rank; ++k) shape.push_back(1 + static_cast<std::int64_t>(rng() % most));
    const int sizes[] = {1, 2, 4, 8, 16};
    const int es = sizes[rng() % 5];
    const Source src = random_source(shape, rng);
    std::vector<std::uint8_t> in(static_cast<std::size_t>(src.elements * es));
    for (auto& b : in) b = static_cast<std::uint8_t>(rng());
    std::int64_t n = 1;
    for (std::int64_t s : shape) n *= s;
    // The destination: row-major, or a strided window of a larger buffer (a pad's interior).
    StridedView dst{0, row_major(shape)};
    std::int64_t dst_elements = n;
    if (trial % 2 == 1) {
      for (auto& s : dst.strides) s *= 2;
      dst.base = 3;
      dst_elements = 2 * n + 3;
    }
    for (int threads : {1, 2}) {
      std::vector<std::uint8_t> want(static_cast<std::size_t>(dst_elements * es), 0xAB);
      std::vector<std::uint8_t> got(want);
      reference_copy(want.data(), dst, in.data(), src.view, shape, es);
      strided_copy(got.data(), dst, in.data(), src.view, shape, es, threads);
      ASSERT_EQ(got, want) << "trial " << trial << " threads " << threads << " es " << es;
    }
  }
}

TEST(StridedCopyTest, LargeTransposesSplitOverThreadsGiveTheSameBytes) {
  // Big enough (4 MiB) that two threads split it; a 2-D and a batched transpose.
  for (const Dims& stored : {Dims{1024, 1024}, Dims{4, 512, 512}}) {
    Dims shape = stored;
    std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
    const Dims st = row_major(stored);
    StridedView src{0, st};
    std::swap(src.strides[st.size() - 1], src.strides[st.size() - 2]);
    std::int64_t n = 1;
    for (std::int64_t s : shape) n *= s;
    std::vector<float> in(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i);
    std::vector<float> want(in.size()), got(in.size());
    const StridedView dst{0, row_major(shape)};
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(in.data());
    reference_copy(reinterpret_cast<std::uint8_t*>(want.data()), dst, bytes, src, shape, 4);
    strided_copy(reinterpret_cast<std::uint8_t*>(got.data()), dst, bytes, src, shape, 4, 2);
    EXPECT_EQ(got, want);
  }
}

TEST(StridedCopyTest, EmptyShapesCopyNothingAndScalarsCopyOneElement) {
  std::uint32_t in = 0x01020304, out = 0;
  strided_copy(reinterpret_cast<std::uint8_t*>(&out), {}, reinterpret_cast<std::uint8_t*>(&in), {},
               {}, 4);
  EXPECT_EQ(out, in);
  out = 7;
  strided_copy(reinterpret_cast<std::uint8_t*>(&out), {0, {1, 1}},
               reinterpret_cast<std::uint8_t*>(&in), {0, {1, 1}}, {3, 0}, 4);
  EXPECT_EQ(out, 7u);
}

TEST(StridedCopyTest, FillRepeatsOneElementOfAnySize) {
  const std::uint8_t value[3] = {1, 2, 3};
  std::vector<std::uint8_t> out(12, 0);
  fill_elements(out.data(), value, 4, 3);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}));
}

}  // namespace
}  // namespace vtrn::runtime
