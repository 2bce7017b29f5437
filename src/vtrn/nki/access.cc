#include "vtrn/nki/access.h"

#include <algorithm>

namespace vtrn::nki {

std::int64_t Access::elements() const {
  std::int64_t n = 1;
  for (const Dim& d : dims) n *= d.count;
  return n;
}

std::int64_t Access::free_elements() const {
  std::int64_t n = 1;
  for (std::size_t i = 1; i < dims.size(); ++i) n *= dims[i].count;
  return n;
}

std::string Access::shape_string() const {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(dims[i].count);
  }
  return out + "]";
}

std::int64_t Access::min_offset() const {
  std::int64_t m = offset;
  for (const Dim& d : dims) {
    if (d.stride < 0) m += d.stride * (d.count - 1);
  }
  return m;
}

std::int64_t Access::max_offset() const {
  std::int64_t m = offset;
  for (const Dim& d : dims) {
    if (d.stride > 0) m += d.stride * (d.count - 1);
  }
  return m;
}

bool Box::overlaps(const Box& other) const {
  for (std::size_t d = 0; d < lo.size(); ++d) {
    if (hi[d] < other.lo[d] || other.hi[d] < lo[d]) return false;
  }
  return true;
}

bool Box::contains(const Box& other) const {
  for (std::size_t d = 0; d < lo.size(); ++d) {
    if (other.lo[d] < lo[d] || other.hi[d] > hi[d]) return false;
  }
  return true;
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

Box footprint(const std::vector<std::int64_t>& shape, const Access& access) {
  Box whole;
  whole.lo.assign(shape.size(), 0);
  for (std::int64_t n : shape) whole.hi.push_back(n - 1);
  if (shape.empty()) return whole;

  const std::vector<std::int64_t> ts = row_major_strides(shape);
  Box box;
  std::int64_t rest = access.offset;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    box.lo.push_back(rest / ts[d]);
    rest %= ts[d];
  }
  if (box.lo[0] >= shape[0] || access.offset < 0) return whole;
  box.hi = box.lo;
  for (const Dim& dim : access.dims) {
    if (dim.count <= 1 || dim.stride == 0) continue;
    if (dim.stride < 0) return whole;
    // The tensor dimension this access dimension walks: ts[d] <= stride < ts[d - 1].
    std::size_t d = 0;
    while (d + 1 < shape.size() && ts[d] > dim.stride) ++d;
    if (ts[d] > dim.stride || dim.stride % ts[d] != 0) return whole;
    box.hi[d] += dim.stride / ts[d] * (dim.count - 1);
    if (box.hi[d] >= shape[d]) return whole;
  }
  return box;
}

Box footprint(const std::vector<std::int64_t>& shape, const Access& access,
              const std::vector<std::uint8_t>& mask) {
  if (mask.empty() || static_cast<std::int64_t>(mask.size()) != access.elements()) {
    return footprint(shape, access);
  }
  const std::vector<std::int64_t> ts = row_major_strides(shape);
  Box box;
  bool any = false;
  for_each_offset(access, [&](std::int64_t i, std::int64_t off) {
    if (!mask[static_cast<std::size_t>(i)]) return;
    std::int64_t rest = off;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      const std::int64_t c = rest / ts[d];
      rest %= ts[d];
      if (!any) {
        box.lo.push_back(c);
        box.hi.push_back(c);
      } else {
        box.lo[d] = std::min(box.lo[d], c);
        box.hi[d] = std::max(box.hi[d], c);
      }
    }
    any = true;
  });
  return any ? box : footprint(shape, access);
}

}  // namespace vtrn::nki
