// stablehlo.reduce_window (JAX's max_pool / avg_pool and some cumsums), decomposed into ops the
// executor runs:
//   1. each operand is padded with its init value: edge padding from `padding`, interior
//      padding base_dilations - 1;
//   2. a gather reads, for output index o and window index w, element o * stride + w *
//      window_dilation of the padded operand along every dim, giving [outputs..., window...];
//   3. a stablehlo.reduce over the window dims, with the op's own region and init values.
// The gather holds one element per (output, window element) pair, so the work and memory are
// those of a direct window loop.
#include <string>
#include <utility>

#include "vtrn/hlo/parsed_op.h"
#include "vtrn/hlo/syntax.h"
#include "vtrn/hlo/verify.h"

namespace vtrn::hlo {
namespace {

int add_op(Block& b, Op o, const std::vector<TensorType>* declared = nullptr) {
  std::vector<TensorType> in;
  for (int v : o.operands) in.push_back(b.type(v));
  for (const TensorType& t : infer_result_types(o, in, declared))
    o.results.push_back(b.add_value(t));
  const int r = o.results[0];
  b.ops.push_back(std::move(o));
  return r;
}

int constant_i64(Block& b, std::int64_t v, const std::vector<std::int64_t>& dims) {
  Op o;
  o.kind = OpKind::kConstant;
  o.literal = Literal::splat_of(TensorType(DType::kI64, dims), static_cast<double>(v));
  return add_op(b, std::move(o));
}

int binary(Block& b, OpKind k, int x, int y) {
  Op o;
  o.kind = k;
  o.operands = {x, y};
  return add_op(b, std::move(o));
}

}  // namespace

std::vector<int> decompose_reduce_window(const ParsedOp& op, Block& block,
                                         const AttributeParser& text) {
  const std::string& n = op.name;
  auto fail = [&](const std::string& what) { text.error(n + ": " + what, op.pos); };
  if (op.operands.empty() || op.operands.size() % 2 != 0)
    fail("expected operands (inputs..., init values...) in pairs, got " +
         std::to_string(op.operands.size()));
  if (op.regions.size() != 1) fail("expected one reducer region");
  const std::size_t count = op.operands.size() / 2;
  const TensorType x0 = block.type(op.operands[0]);
  const int r = x0.rank();
  if (r == 0) fail("operand 0 has type " + x0.str() + ", expected rank >= 1");
  for (std::size_t i = 0; i < count; ++i) {
    const TensorType t = block.type(op.operands[i]);
    if (t.dims != x0.dims)
      fail("operand " + std::to_string(i) + " has type " + t.str() + ", expected the shape of " +
           x0.str());
    if (block.type(op.operands[count + i]) != TensorType(t.dtype, {}))
      fail("init value " + std::to_string(i) + " has type " +
           block.type(op.operands[count + i]).str() + ", expected tensor<" +
           std::string(dtype_name(t.dtype)) + ">");
  }
  auto ints = [&](const char* name, std::int64_t fill, std::size_t size) {
    const Attr* a = op.attr(name);
    std::vector<std::int64_t> v =
        a ? text.ints_of(*a, name, op.pos) : std::vector<std::int64_t>(size, fill);
    if (v.size() != size)
      fail(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " +
           std::to_string(size));
    return v;
  };
  const std::size_t ur = static_cast<std::size_t>(r);
  if (!op.attr("window_dimensions")) fail("missing attribute 'window_dimensions'");
  const auto window = ints("window_dimensions", 1, ur);
  const auto strides = ints("window_strides", 1, ur);
  const auto base = ints("base_dilations", 1, ur);
  const auto wdil = ints("window_dilations", 1, ur);
  const auto padding = ints("padding", 0, 2 * ur);

  std::vector<std::int64_t> low(ur), high(ur), interior(ur), out(ur);
  for (std::size_t d = 0; d < ur; ++d) {
    if (window[d] < 1 || strides[d] < 1 || base[d] < 1 || wdil[d] < 1)
      fail("window dimensions, strides and dilations must be positive (dim " + std::to_string(d) +
           ")");
    low[d] = padding[2 * d];
    high[d] = padding[2 * d + 1];
    interior[d] = base[d] - 1;
    const std::int64_t dilated = x0.dims[d] == 0 ? 0 : (x0.dims[d] - 1) * base[d] + 1;
    const std::int64_t padded = dilated + low[d] + high[d];
    const std::int64_t extent = (window[d] - 1) * wdil[d] + 1;
    out[d] = padded < extent ? 0 : (padded - extent) / strides[d] + 1;
  }

  // Indices [outputs..., window..., r]: component d is o_d * stride_d + w_d * dilation_d.
  std::vector<std::int64_t> idx_dims = out;
  idx_dims.insert(idx_dims.end(), window.begin(), window.end());
  idx_dims.push_back(1);
  std::vector<int> parts;
  for (std::size_t d = 0; d < ur; ++d) {
    auto iota = [&](std::size_t dim) {
      Op o;
      o.kind = OpKind::kIota;
      o.dimension = static_cast<std::int64_t>(dim);
      std::vector<TensorType> t = {TensorType(DType::kI64, idx_dims)};
      return add_op(block, std::move(o), &t);
    };
    const int on =
        binary(block, OpKind::kMultiply, iota(d), constant_i64(block, strides[d], idx_dims));
    const int wn =
        binary(block, OpKind::kMultiply, iota(ur + d), constant_i64(block, wdil[d], idx_dims));
    parts.push_back(binary(block, OpKind::kAdd, on, wn));
  }
  int indices = parts[0];
  if (parts.size() > 1) {
    Op c;
    c.kind = OpKind::kConcatenate;
    c.operands = parts;
    c.dimension = static_cast<std::int64_t>(2 * ur);
    indices = add_op(block, std::move(c));
  }

  Op reduce;
  reduce.kind = OpKind::kReduce;
  for (std::size_t i = 0; i < count; ++i) {
    Op pad;
    pad.kind = OpKind::kPad;
    pad.operands = {op.operands[i], op.operands[count + i]};
    pad.edge_padding_low = low;
    pad.edge_padding_high = high;
    pad.interior_padding = interior;
    const int padded = add_op(block, std::move(pad));
    Op g;
    g.kind = OpKind::kGather;
    g.operands = {padded, indices};
    for (std::size_t d = 0; d < ur; ++d) {
      g.gather.collapsed_slice_dims.push_back(static_cast<std::int64_t>(d));
      g.gather.start_index_map.push_back(static_cast<std::int64_t>(d));
    }
    g.gather.index_vector_dim = static_cast<std::int64_t>(2 * ur);
    g.dims.assign(ur, 1);
    reduce.operands.push_back(add_op(block, std::move(g)));
  }
  for (std::size_t i = 0; i < count; ++i) reduce.operands.push_back(op.operands[count + i]);
  for (std::size_t d = 0; d < ur; ++d) reduce.dims.push_back(static_cast<std::int64_t>(ur + d));
  reduce.regions = op.regions;
  std::vector<TensorType> in;
  for (int v : reduce.operands) in.push_back(block.type(v));
  std::vector<TensorType> types;
  try {
    types = infer_result_types(reduce, in, nullptr);
  } catch (const Error& e) {
    fail(e.what());
  }
  for (const TensorType& t : types) reduce.results.push_back(block.add_value(t));
  std::vector<int> results = reduce.results;
  block.ops.push_back(std::move(reduce));
  if (op.have_types && op.out_types.size() != results.size())
    fail("the type lists " + std::to_string(op.out_types.size()) + " result(s), expected " +
         std::to_string(results.size()));
  for (std::size_t i = 0; op.have_types && i < results.size(); ++i)
    if (op.out_types[i] != block.type(results[i]))
      fail("result " + std::to_string(i) + " has type " + op.out_types[i].str() + ", expected " +
           block.type(results[i]).str());
  return results;
}

}  // namespace vtrn::hlo
