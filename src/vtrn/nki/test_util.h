// Helpers for the nki unit tests: tensors and whole-tensor or sliced access patterns.
#pragma once

#include <string>
#include <vector>

#include "vtrn/nki/program.h"

namespace vtrn::nki::testing {

inline std::int32_t tensor(Program& p, const std::string& name, Memory m, DType d,
                           std::vector<std::int64_t> shape, bool external = false) {
  TensorDecl t;
  t.name = name;
  t.memory = m;
  t.dtype = d;
  t.shape = std::move(shape);
  t.origin = "test.py:1";
  t.external = external;
  return p.add_tensor(std::move(t));
}

/// The whole tensor, in its own row-major order.
inline Access whole(const Program& p, std::int32_t t) {
  const auto& shape = p.tensors()[static_cast<std::size_t>(t)].shape;
  Access a;
  a.tensor = t;
  const auto strides = row_major_strides(shape);
  for (std::size_t d = 0; d < shape.size(); ++d) a.dims.push_back({strides[d], shape[d]});
  return a;
}

/// Rows [r0, r0 + rows) and columns [c0, c0 + cols) of a 2-D tensor.
inline Access block(const Program& p, std::int32_t t, std::int64_t r0, std::int64_t rows,
                    std::int64_t c0, std::int64_t cols) {
  const auto& shape = p.tensors()[static_cast<std::size_t>(t)].shape;
  Access a;
  a.tensor = t;
  a.offset = r0 * shape[1] + c0;
  a.dims = {{shape[1], rows}, {1, cols}};
  return a;
}

inline Instruction inst(const Access& dst, std::vector<Access> srcs, const std::string& api) {
  Instruction i;
  i.dst = dst;
  i.srcs = std::move(srcs);
  i.api = api;
  i.origin = "test.py:2";
  return i;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace vtrn::nki::testing
