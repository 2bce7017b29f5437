// An instruction operand: an affine access pattern over one tensor, and the region of the
// tensor it touches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vtrn::nki {

/// One dimension of an access pattern: |count| elements |stride| elements apart (stride 0
/// broadcasts one element).
struct Dim {
  std::int64_t stride = 0;
  std::int64_t count = 1;
};

/// Elements offset + sum_i k_i * dims[i].stride, k_i < dims[i].count, visited in row-major
/// order of the dims. For SBUF/PSUM operands dims[0] is the partition dimension.
struct Access {
  std::int32_t tensor = -1;
  std::int64_t offset = 0;
  std::vector<Dim> dims;

  std::int64_t elements() const;
  std::int64_t partitions() const { return dims.empty() ? 1 : dims[0].count; }
  std::int64_t free_elements() const;
  /// "[128, 512]"
  std::string shape_string() const;
  /// Smallest and largest element offset the pattern visits.
  std::int64_t min_offset() const;
  std::int64_t max_offset() const;
};

/// An inclusive box in a tensor's own coordinates.
struct Box {
  std::vector<std::int64_t> lo, hi;
  bool overlaps(const Box& other) const;
  bool contains(const Box& other) const;
};

/// Row-major strides of |shape|.
std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape);

/// The box of |shape| that |access| stays inside: exact when every access dimension walks
/// along one tensor dimension without wrapping, the whole tensor otherwise.
Box footprint(const std::vector<std::int64_t>& shape, const Access& access);
/// The box of the elements |mask| enables (one byte per element of |access|); the plain
/// footprint when |mask| is empty.
Box footprint(const std::vector<std::int64_t>& shape, const Access& access,
              const std::vector<std::uint8_t>& mask);

/// Calls visit(element_index, offset) for each element of |access| in row-major order.
template <typename Visit>
void for_each_offset(const Access& access, Visit&& visit) {
  const std::size_t rank = access.dims.size();
  if (rank == 0) {
    visit(std::int64_t{0}, access.offset);
    return;
  }
  std::vector<std::int64_t> idx(rank, 0);
  const Dim inner = access.dims[rank - 1];
  std::int64_t element = 0;
  std::int64_t base = access.offset;
  while (true) {
    std::int64_t off = base;
    for (std::int64_t k = 0; k < inner.count; ++k, off += inner.stride) visit(element++, off);
    std::int64_t d = static_cast<std::int64_t>(rank) - 2;
    for (; d >= 0; --d) {
      base += access.dims[d].stride;
      if (++idx[d] < access.dims[d].count) break;
      base -= access.dims[d].stride * access.dims[d].count;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace vtrn::nki
