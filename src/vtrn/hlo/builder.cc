#include "vtrn/hlo/builder.h"

#include <numeric>

#include "vtrn/hlo/verify.h"

namespace vtrn::hlo {
namespace {

Op make(OpKind kind, std::vector<Value> operands) {
  Op op;
  op.kind = kind;
  for (Value v : operands) op.operands.push_back(v.id);
  return op;
}

}  // namespace

Builder::Builder(std::string module_name) : name_(std::move(module_name)) {}

Value Builder::param(TensorType type) {
  const int v = block_.add_value(std::move(type));
  block_.args.push_back(v);
  return {v};
}

std::vector<Value> Builder::add_op(Op op, const std::vector<TensorType>* declared) {
  std::vector<TensorType> in;
  for (std::size_t i = 0; i < op.operands.size(); ++i) {
    const int v = op.operands[i];
    if (v < 0 || v >= static_cast<int>(block_.types.size()))
      throw Error(qualified_op_name(op.kind) + ": operand " + std::to_string(i) +
                  " is not a value of this builder");
    in.push_back(block_.types[v]);
  }
  std::vector<TensorType> out = infer_result_types(op, in, declared);
  if (declared) {
    for (std::size_t i = 0; i < out.size() && i < declared->size(); ++i)
      if (out[i] != (*declared)[i])
        throw Error(qualified_op_name(op.kind) + ": result " + std::to_string(i) + " has type " +
                    (*declared)[i].str() + ", expected " + out[i].str());
  }
  std::vector<Value> res;
  op.results.clear();
  for (TensorType& t : out) {
    const int v = block_.add_value(std::move(t));
    op.results.push_back(v);
    res.push_back({v});
  }
  block_.ops.push_back(std::move(op));
  return res;
}

Value Builder::unary(OpKind kind, Value x) {
  if (!is_unary_elementwise(kind) || kind == OpKind::kConvert)
    throw Error("Builder::unary: '" + std::string(op_name(kind)) +
                "' is not a unary elementwise op");
  return add_one(make(kind, {x}));
}

Value Builder::sleef_exp(Value x) {
  Op op = make(OpKind::kExp, {x});
  op.sleef = true;
  return add_one(std::move(op));
}

Value Builder::vml_unary(OpKind kind, Value x) {
  if (!has_vml_form(kind))
    throw Error("Builder::vml_unary: '" + std::string(op_name(kind)) + "' has no vml form");
  Op op = make(kind, {x});
  op.vml = true;
  return add_one(std::move(op));
}

Value Builder::binary(OpKind kind, Value a, Value b) {
  if (!is_binary_elementwise(kind))
    throw Error("Builder::binary: '" + std::string(op_name(kind)) +
                "' is not a binary elementwise op");
  return add_one(make(kind, {a, b}));
}

Value Builder::compare(Comparison dir, Value a, Value b, CompareType ct) {
  Op op = make(OpKind::kCompare, {a, b});
  op.comparison = dir;
  op.compare_type = ct;
  return add_one(std::move(op));
}

Value Builder::select(Value p, Value t, Value f) {
  return add_one(make(OpKind::kSelect, {p, t, f}));
}
Value Builder::clamp(Value lo, Value x, Value hi) {
  return add_one(make(OpKind::kClamp, {lo, x, hi}));
}

Value Builder::fma(Value a, Value b, Value c) { return add_one(make(OpKind::kFma, {a, b, c})); }

Value Builder::convert(Value x, DType dtype) {
  std::vector<TensorType> d{TensorType(dtype, type(x).dims)};
  return add_one(make(OpKind::kConvert, {x}), &d);
}

Value Builder::constant(Literal literal) {
  Op op = make(OpKind::kConstant, {});
  op.literal = std::move(literal);
  return add_one(std::move(op));
}

Value Builder::iota(TensorType t, std::int64_t dimension) {
  Op op = make(OpKind::kIota, {});
  op.dimension = dimension;
  std::vector<TensorType> d{std::move(t)};
  return add_one(std::move(op), &d);
}

Value Builder::broadcast_in_dim(Value x, std::vector<std::int64_t> shape,
                                std::vector<std::int64_t> bdims) {
  Op op = make(OpKind::kBroadcastInDim, {x});
  op.dims = std::move(bdims);
  std::vector<TensorType> d{TensorType(type(x).dtype, std::move(shape))};
  return add_one(std::move(op), &d);
}

Value Builder::broadcast_to(Value x, std::vector<std::int64_t> shape) {
  const int r = type(x).rank();
  const int out_rank = static_cast<int>(shape.size());
  if (r > out_rank)
    throw Error("Builder::broadcast_to: cannot broadcast " + type(x).str() + " to a lower rank");
  std::vector<std::int64_t> bd(static_cast<std::size_t>(r));
  std::iota(bd.begin(), bd.end(), out_rank - r);
  return broadcast_in_dim(x, std::move(shape), std::move(bd));
}

Value Builder::reshape(Value x, std::vector<std::int64_t> shape) {
  std::vector<TensorType> d{TensorType(type(x).dtype, std::move(shape))};
  return add_one(make(OpKind::kReshape, {x}), &d);
}

Value Builder::transpose(Value x, std::vector<std::int64_t> perm) {
  Op op = make(OpKind::kTranspose, {x});
  op.dims = std::move(perm);
  return add_one(std::move(op));
}

Value Builder::slice(Value x, std::vector<std::int64_t> start, std::vector<std::int64_t> limit,
                     std::vector<std::int64_t> strides) {
  Op op = make(OpKind::kSlice, {x});
  if (strides.empty()) strides.assign(start.size(), 1);
  op.start_indices = std::move(start);
  op.limit_indices = std::move(limit);
  op.strides = std::move(strides);
  return add_one(std::move(op));
}

Value Builder::dynamic_slice(Value x, std::vector<Value> start, std::vector<std::int64_t> sizes) {
  start.insert(start.begin(), x);
  Op op = make(OpKind::kDynamicSlice, start);
  op.dims = std::move(sizes);
  return add_one(std::move(op));
}

Value Builder::dynamic_update_slice(Value x, Value update, std::vector<Value> start) {
  start.insert(start.begin(), update);
  start.insert(start.begin(), x);
  return add_one(make(OpKind::kDynamicUpdateSlice, start));
}

Value Builder::concatenate(std::vector<Value> xs, std::int64_t dimension) {
  Op op = make(OpKind::kConcatenate, xs);
  op.dimension = dimension;
  return add_one(std::move(op));
}

Value Builder::pad(Value x, Value pv, std::vector<std::int64_t> low, std::vector<std::int64_t> high,
                   std::vector<std::int64_t> interior) {
  Op op = make(OpKind::kPad, {x, pv});
  op.edge_padding_low = std::move(low);
  op.edge_padding_high = std::move(high);
  op.interior_padding = std::move(interior);
  return add_one(std::move(op));
}

Value Builder::reverse(Value x, std::vector<std::int64_t> dims) {
  Op op = make(OpKind::kReverse, {x});
  op.dims = std::move(dims);
  return add_one(std::move(op));
}

Value Builder::reduce(Value x, Value init, std::vector<std::int64_t> dims, ReduceKind kind,
                      bool cascade_sum, bool vec_sum) {
  Op op = make(OpKind::kReduce, {x, init});
  op.dims = std::move(dims);
  op.cascade_sum = cascade_sum;
  op.vec_sum = vec_sum;
  op.regions.push_back(make_reduce_region(kind, type(x).dtype));
  return add_one(std::move(op));
}

Value Builder::dot_general(Value lhs, Value rhs, DotDims dims, std::optional<DType> result_dtype,
                           bool sgemm) {
  Op op = make(OpKind::kDotGeneral, {lhs, rhs});
  op.dot = std::move(dims);
  op.sgemm = sgemm;
  if (result_dtype) {
    std::vector<TensorType> in{type(lhs), type(rhs)};
    std::vector<TensorType> d = infer_result_types(op, in, nullptr);
    d[0].dtype = *result_dtype;
    return add_one(std::move(op), &d);
  }
  return add_one(std::move(op));
}

Value Builder::matmul(Value lhs, Value rhs) {
  DotDims d;
  d.lhs_contracting = {type(lhs).rank() - 1};
  d.rhs_contracting = {0};
  return dot_general(lhs, rhs, std::move(d));
}

Value Builder::convolution(Value lhs, Value rhs, ConvAttrs attrs) {
  Op op = make(OpKind::kConvolution, {lhs, rhs});
  op.conv = std::move(attrs);
  return add_one(std::move(op));
}

Value Builder::gather(Value x, Value indices, GatherDims dims,
                      std::vector<std::int64_t> slice_sizes, bool sorted) {
  Op op = make(OpKind::kGather, {x, indices});
  op.gather = std::move(dims);
  op.dims = std::move(slice_sizes);
  op.indices_are_sorted = sorted;
  return add_one(std::move(op));
}

Value Builder::scatter(Value x, Value indices, Value updates, ScatterDims dims, ScatterKind kind) {
  Op op = make(OpKind::kScatter, {x, indices, updates});
  op.scatter = std::move(dims);
  op.regions.push_back(make_scatter_region(kind, type(x).dtype));
  return add_one(std::move(op));
}

std::vector<Value> Builder::sort(std::vector<Value> xs, std::int64_t dimension, int key,
                                 bool descending, bool stable) {
  Op op = make(OpKind::kSort, xs);
  op.dimension = dimension;
  op.is_stable = stable;
  std::vector<DType> dts;
  for (Value v : xs) dts.push_back(type(v).dtype);
  if (key < 0 || key >= static_cast<int>(xs.size()))
    throw Error("Builder::sort: key operand " + std::to_string(key) + " is out of range");
  op.regions.push_back(make_sort_region(dts, key, descending));
  return add_op(std::move(op));
}

std::pair<Value, Value> Builder::rng_bit_generator(Value state, TensorType output,
                                                   RngAlgorithm algorithm) {
  Op op = make(OpKind::kRngBitGenerator, {state});
  op.rng_algorithm = algorithm;
  std::vector<TensorType> d{type(state), std::move(output)};
  std::vector<Value> r = add_op(std::move(op), &d);
  return {r[0], r[1]};
}

const Op* Builder::defining_op(Value v) const {
  for (auto it = block_.ops.rbegin(); it != block_.ops.rend(); ++it)
    for (int r : it->results)
      if (r == v.id) return &*it;
  return nullptr;
}

std::vector<Value> Builder::custom_call(std::string target, std::vector<Value> operands,
                                        std::vector<TensorType> results,
                                        std::string backend_config) {
  Op op = make(OpKind::kCustomCall, operands);
  op.call_target_name = std::move(target);
  op.backend_config = std::move(backend_config);
  return add_op(std::move(op), &results);
}

Module Builder::finish(std::vector<Value> results) {
  for (Value v : results)
    if (v.id < 0 || v.id >= static_cast<int>(block_.types.size()))
      throw Error("Builder::finish: a result is not a value of this builder");
  Module m;
  m.name = name_;
  for (Value v : results) block_.results.push_back(v.id);
  m.main = std::move(block_);
  block_ = Block();
  return m;
}

}  // namespace vtrn::hlo
