#include "vtrn/hlo/verify.h"

#include <algorithm>
#include <set>
#include <string>

#include "vtrn/hlo/convolution.h"
#include "vtrn/hlo/syntax.h"

namespace vtrn::hlo {
namespace {

std::string dims_str(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

[[noreturn]] void fail(const Op& op, const std::string& msg) {
  throw Error(qualified_op_name(op.kind) + ": " + msg);
}

void expect_count(const Op& op, const std::vector<TensorType>& in, std::size_t n) {
  if (in.size() != n)
    fail(op, "expected " + std::to_string(n) + " operand(s), got " + std::to_string(in.size()));
}

const TensorType& declared_one(const Op& op, const std::vector<TensorType>* declared) {
  if (!declared || declared->size() != 1) fail(op, "the result type must be given (one result)");
  return (*declared)[0];
}

void check_unique_dims(const Op& op, const std::vector<std::int64_t>& dims, int rank,
                       const char* what) {
  std::set<std::int64_t> seen;
  for (std::int64_t d : dims) {
    if (d < 0 || d >= rank)
      fail(op, std::string(what) + " " + dims_str(dims) + " has dimension " + std::to_string(d) +
                   ", expected 0 <= d < " + std::to_string(rank));
    if (!seen.insert(d).second)
      fail(op,
           std::string(what) + " " + dims_str(dims) + " repeats dimension " + std::to_string(d));
  }
}

void check_scalar_int(const Op& op, const std::vector<TensorType>& in, std::size_t i) {
  if (in[i].rank() != 0 || !(is_integer(in[i].dtype)))
    fail(op, "operand " + std::to_string(i) + " has type " + in[i].str() +
                 ", expected a scalar integer index");
}

bool float_only(OpKind k) {
  switch (k) {
    case OpKind::kCeil:
    case OpKind::kCosine:
    case OpKind::kExp:
    case OpKind::kExpm1:
    case OpKind::kFloor:
    case OpKind::kLog:
    case OpKind::kLog1p:
    case OpKind::kLogistic:
    case OpKind::kRoundEven:
    case OpKind::kRsqrt:
    case OpKind::kSine:
    case OpKind::kSqrt:
    case OpKind::kTanh:
      return true;
    default:
      return false;
  }
}

std::vector<TensorType> infer_reduce(const Op& op, const std::vector<TensorType>& in) {
  if (in.empty() || in.size() % 2 != 0)
    fail(op, "expected inputs followed by as many init values, got " + std::to_string(in.size()) +
                 " operands");
  const std::size_t n = in.size() / 2;
  const TensorType& x0 = in[0];
  check_unique_dims(op, op.dims, x0.rank(), "dimensions");
  std::vector<TensorType> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (in[i].dims != x0.dims)
      fail(op, "input " + std::to_string(i) + " has type " + in[i].str() +
                   ", expected the shape of input 0 (" + x0.str() + ")");
    const TensorType& init = in[n + i];
    if (init.rank() != 0 || init.dtype != in[i].dtype)
      fail(op, "init value " + std::to_string(i) + " (operand " + std::to_string(n + i) +
                   ") has type " + init.str() + ", expected " + TensorType(in[i].dtype, {}).str());
    TensorType r(in[i].dtype, {});
    for (int d = 0; d < x0.rank(); ++d)
      if (std::find(op.dims.begin(), op.dims.end(), d) == op.dims.end())
        r.dims.push_back(x0.dims[d]);
    out.push_back(r);
  }
  if (op.regions.size() != 1) fail(op, "expected one reducer region");
  const Block& body = *op.regions[0];
  if (body.args.size() != 2 * n || body.results.size() != n)
    fail(op, "the reducer takes " + std::to_string(body.args.size()) + " arguments and returns " +
                 std::to_string(body.results.size()) + " values, expected " +
                 std::to_string(2 * n) + " and " + std::to_string(n));
  for (std::size_t i = 0; i < n; ++i) {
    TensorType s(in[i].dtype, {});
    if (body.type(body.args[i]) != s || body.type(body.args[n + i]) != s ||
        body.type(body.results[i]) != s)
      fail(op, "reducer argument/result " + std::to_string(i) + " must have type " + s.str());
  }
  return out;
}

std::vector<TensorType> infer_dot(const Op& op, const std::vector<TensorType>& in,
                                  const std::vector<TensorType>* declared) {
  expect_count(op, in, 2);
  const TensorType &l = in[0], &r = in[1];
  const DotDims& d = op.dot;
  if (d.lhs_batch.size() != d.rhs_batch.size())
    fail(op, "lhs_batching_dimensions " + dims_str(d.lhs_batch) + " and rhs_batching_dimensions " +
                 dims_str(d.rhs_batch) + " differ in length");
  if (d.lhs_contracting.size() != d.rhs_contracting.size())
    fail(op, "lhs_contracting_dimensions " + dims_str(d.lhs_contracting) +
                 " and rhs_contracting_dimensions " + dims_str(d.rhs_contracting) +
                 " differ in length");
  std::vector<std::int64_t> lall = d.lhs_batch, rall = d.rhs_batch;
  lall.insert(lall.end(), d.lhs_contracting.begin(), d.lhs_contracting.end());
  rall.insert(rall.end(), d.rhs_contracting.begin(), d.rhs_contracting.end());
  check_unique_dims(op, lall, l.rank(), "lhs batching+contracting dimensions");
  check_unique_dims(op, rall, r.rank(), "rhs batching+contracting dimensions");
  for (std::size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (l.dims[d.lhs_batch[i]] != r.dims[d.rhs_batch[i]])
      fail(op, "batching dimension " + std::to_string(i) + " has size " +
                   std::to_string(l.dims[d.lhs_batch[i]]) + " in lhs " + l.str() + " but " +
                   std::to_string(r.dims[d.rhs_batch[i]]) + " in rhs " + r.str());
  for (std::size_t i = 0; i < d.lhs_contracting.size(); ++i)
    if (l.dims[d.lhs_contracting[i]] != r.dims[d.rhs_contracting[i]])
      fail(op, "contracting dimension " + std::to_string(i) + " has size " +
                   std::to_string(l.dims[d.lhs_contracting[i]]) + " in lhs " + l.str() + " but " +
                   std::to_string(r.dims[d.rhs_contracting[i]]) + " in rhs " + r.str());
  TensorType out(l.dtype, {});
  if (declared && declared->size() == 1) out.dtype = (*declared)[0].dtype;
  for (std::int64_t b : d.lhs_batch) out.dims.push_back(l.dims[b]);
  for (int i = 0; i < l.rank(); ++i)
    if (std::find(lall.begin(), lall.end(), i) == lall.end()) out.dims.push_back(l.dims[i]);
  for (int i = 0; i < r.rank(); ++i)
    if (std::find(rall.begin(), rall.end(), i) == rall.end()) out.dims.push_back(r.dims[i]);
  return {out};
}

std::vector<TensorType> infer_gather(const Op& op, const std::vector<TensorType>& in) {
  expect_count(op, in, 2);
  const TensorType &x = in[0], &idx = in[1];
  const GatherDims& g = op.gather;
  if (!is_integer(idx.dtype))
    fail(op, "operand 1 (start_indices) has type " + idx.str() + ", expected integer elements");
  if (static_cast<int>(op.dims.size()) != x.rank())
    fail(op, "slice_sizes " + dims_str(op.dims) + " has " + std::to_string(op.dims.size()) +
                 " entries, expected the operand rank " + std::to_string(x.rank()));
  for (int i = 0; i < x.rank(); ++i)
    if (op.dims[i] < 0 || op.dims[i] > x.dims[i])
      fail(op, "slice_sizes " + dims_str(op.dims) + " exceeds operand " + x.str() +
                   " in dimension " + std::to_string(i));
  check_unique_dims(op, g.collapsed_slice_dims, x.rank(), "collapsed_slice_dims");
  for (std::int64_t c : g.collapsed_slice_dims)
    if (op.dims[c] > 1)
      fail(op, "collapsed dimension " + std::to_string(c) + " has slice size " +
                   std::to_string(op.dims[c]) + ", expected at most 1");
  check_unique_dims(op, g.start_index_map, x.rank(), "start_index_map");
  if (g.index_vector_dim < 0 || g.index_vector_dim > idx.rank())
    fail(op, "index_vector_dim " + std::to_string(g.index_vector_dim) +
                 " is out of range for start_indices " + idx.str());
  const std::int64_t ivsize = g.index_vector_dim < idx.rank() ? idx.dims[g.index_vector_dim] : 1;
  if (static_cast<std::int64_t>(g.start_index_map.size()) != ivsize)
    fail(op, "start_index_map " + dims_str(g.start_index_map) + " has " +
                 std::to_string(g.start_index_map.size()) +
                 " entries, expected the index vector size " + std::to_string(ivsize));
  std::vector<std::int64_t> offset_sizes;
  for (int i = 0; i < x.rank(); ++i)
    if (std::find(g.collapsed_slice_dims.begin(), g.collapsed_slice_dims.end(), i) ==
        g.collapsed_slice_dims.end())
      offset_sizes.push_back(op.dims[i]);
  if (g.offset_dims.size() != offset_sizes.size())
    fail(op, "offset_dims " + dims_str(g.offset_dims) + " has " +
                 std::to_string(g.offset_dims.size()) + " entries, expected " +
                 std::to_string(offset_sizes.size()) +
                 " (operand rank minus collapsed_slice_dims)");
  std::vector<std::int64_t> batch;
  for (int i = 0; i < idx.rank(); ++i)
    if (i != g.index_vector_dim) batch.push_back(idx.dims[i]);
  const int out_rank = static_cast<int>(batch.size() + offset_sizes.size());
  check_unique_dims(op, g.offset_dims, out_rank, "offset_dims");
  if (!std::is_sorted(g.offset_dims.begin(), g.offset_dims.end()))
    fail(op, "offset_dims " + dims_str(g.offset_dims) + " must be sorted");
  TensorType out(x.dtype, {});
  std::size_t bi = 0, oi = 0;
  for (int d = 0; d < out_rank; ++d) {
    if (std::find(g.offset_dims.begin(), g.offset_dims.end(), d) != g.offset_dims.end())
      out.dims.push_back(offset_sizes[oi++]);
    else
      out.dims.push_back(batch[bi++]);
  }
  return {out};
}

std::vector<TensorType> infer_scatter(const Op& op, const std::vector<TensorType>& in) {
  expect_count(op, in, 3);
  const TensorType &x = in[0], &idx = in[1], &upd = in[2];
  const ScatterDims& s = op.scatter;
  if (!is_integer(idx.dtype))
    fail(op, "operand 1 (scatter_indices) has type " + idx.str() + ", expected integer elements");
  if (upd.dtype != x.dtype)
    fail(op, "operand 2 (updates) has element type " + std::string(dtype_name(upd.dtype)) +
                 ", expected " + std::string(dtype_name(x.dtype)) + " (the operand's)");
  if (s.update_window_dims.size() + s.inserted_window_dims.size() !=
      static_cast<std::size_t>(x.rank()))
    fail(op, "update_window_dims " + dims_str(s.update_window_dims) + " and inserted_window_dims " +
                 dims_str(s.inserted_window_dims) + " must together cover the operand rank " +
                 std::to_string(x.rank()));
  check_unique_dims(op, s.inserted_window_dims, x.rank(), "inserted_window_dims");
  check_unique_dims(op, s.scatter_dims_to_operand_dims, x.rank(), "scatter_dims_to_operand_dims");
  if (s.index_vector_dim < 0 || s.index_vector_dim > idx.rank())
    fail(op, "index_vector_dim " + std::to_string(s.index_vector_dim) +
                 " is out of range for scatter_indices " + idx.str());
  const std::int64_t ivsize = s.index_vector_dim < idx.rank() ? idx.dims[s.index_vector_dim] : 1;
  if (static_cast<std::int64_t>(s.scatter_dims_to_operand_dims.size()) != ivsize)
    fail(op, "scatter_dims_to_operand_dims " + dims_str(s.scatter_dims_to_operand_dims) + " has " +
                 std::to_string(s.scatter_dims_to_operand_dims.size()) +
                 " entries, expected the index vector size " + std::to_string(ivsize));
  const int scatter_rank = idx.rank() - (s.index_vector_dim < idx.rank() ? 1 : 0);
  if (upd.rank() != scatter_rank + static_cast<int>(s.update_window_dims.size()))
    fail(op, "operand 2 (updates) has type " + upd.str() + ", expected rank " +
                 std::to_string(scatter_rank + s.update_window_dims.size()));
  check_unique_dims(op, s.update_window_dims, upd.rank(), "update_window_dims");
  // Window sizes must fit in the operand.
  std::size_t w = 0;
  for (int d = 0; d < x.rank(); ++d) {
    if (std::find(s.inserted_window_dims.begin(), s.inserted_window_dims.end(), d) !=
        s.inserted_window_dims.end())
      continue;
    const std::int64_t ws = upd.dims[s.update_window_dims[w++]];
    if (ws > x.dims[d])
      fail(op, "update window size " + std::to_string(ws) + " exceeds operand dimension " +
                   std::to_string(d) + " of " + x.str());
  }
  if (op.regions.size() != 1) fail(op, "expected one update region");
  const Block& body = *op.regions[0];
  TensorType sc(x.dtype, {});
  if (body.args.size() != 2 || body.results.size() != 1 || body.type(body.args[0]) != sc ||
      body.type(body.results[0]) != sc)
    fail(op, "the update region must take two " + sc.str() + " arguments and return one");
  return {x};
}

}  // namespace

std::vector<TensorType> infer_result_types(const Op& op, const std::vector<TensorType>& in,
                                           const std::vector<TensorType>* declared) {
  const OpKind k = op.kind;
  if (op.sgemm && k != OpKind::kDotGeneral)
    fail(op, std::string(syntax::kVtrnMath) + " = \"" + std::string(syntax::kVtrnMathSgemm) +
                 "\" is an attribute of dot_general only");
  if ((op.cascade_sum || op.vec_sum) &&
      (k != OpKind::kReduce || in.size() != 2 || in[0].dtype != DType::kF32 || op.regions.empty() ||
       match_reduce_region(*op.regions[0]) != ReduceKind::kAdd || (op.cascade_sum && op.vec_sum)))
    fail(op,
         std::string(syntax::kVtrnMath) + " = \"" +
             std::string(op.cascade_sum ? syntax::kVtrnMathCascadeSum : syntax::kVtrnMathVecSum) +
             "\" is an attribute of a reduce adding one float32 operand only");
  if (op.sleef && (k != OpKind::kExp || in.size() != 1 || in[0].dtype != DType::kF32 || op.vml))
    fail(op, std::string(syntax::kVtrnMath) + " = \"" + std::string(syntax::kVtrnMathSleef) +
                 "\" is an attribute of a float32 exponential only");
  if (op.vml && !has_vml_form(k))
    fail(op, std::string(syntax::kVtrnMath) +
                 " is an attribute of exponential, log, sqrt, sine, cosine and tanh only");
  if (is_unary_elementwise(k)) {
    expect_count(op, in, 1);
    const TensorType& x = in[0];
    if (k == OpKind::kConvert) {
      const TensorType& r = declared_one(op, declared);
      if (r.dims != x.dims)
        fail(op, "result " + r.str() + " must have the shape of operand 0 (" + x.str() + ")");
      return {r};
    }
    if (float_only(k) && !is_float(x.dtype) && !is_complex(x.dtype))
      fail(op, "operand 0 has type " + x.str() + ", expected floating-point or complex elements");
    if (k == OpKind::kNot && !is_integer(x.dtype) && !is_pred(x.dtype))
      fail(op, "operand 0 has type " + x.str() + ", expected integer or i1 elements");
    if ((k == OpKind::kNegate || k == OpKind::kAbs || k == OpKind::kSign) && is_pred(x.dtype))
      fail(op, "operand 0 has type " + x.str() + ", expected numeric elements (not i1)");
    if (k == OpKind::kAbs && is_complex(x.dtype)) return {TensorType(DType::kF32, x.dims)};
    return {x};
  }
  if (is_binary_elementwise(k)) {
    expect_count(op, in, 2);
    if (in[1] != in[0])
      fail(op, "operand 1 has type " + in[1].str() + ", expected " + in[0].str() +
                   " (the type of operand 0)");
    const DType d = in[0].dtype;
    if ((k == OpKind::kAnd || k == OpKind::kOr || k == OpKind::kXor) && !is_integer(d) &&
        !is_pred(d))
      fail(op, "operands have type " + in[0].str() + ", expected integer or i1 elements");
    if (k == OpKind::kAtan2 && !is_float(d))
      fail(op, "operands have type " + in[0].str() + ", expected floating-point elements");
    if ((k == OpKind::kDivide || k == OpKind::kRemainder || k == OpKind::kPower ||
         k == OpKind::kSubtract) &&
        is_pred(d))
      fail(op, "operands have type " + in[0].str() + ", expected numeric elements (not i1)");
    return {in[0]};
  }
  switch (k) {
    case OpKind::kCompare:
      expect_count(op, in, 2);
      if (in[1] != in[0])
        fail(op, "operand 1 has type " + in[1].str() + ", expected " + in[0].str() +
                     " (the type of operand 0)");
      return {TensorType(DType::kPred, in[0].dims)};
    case OpKind::kSelect:
      expect_count(op, in, 3);
      if (in[0].dtype != DType::kPred || (in[0].rank() != 0 && in[0].dims != in[1].dims))
        fail(op, "operand 0 (pred) has type " + in[0].str() + ", expected " +
                     TensorType(DType::kPred, in[1].dims).str() + " or tensor<i1>");
      if (in[2] != in[1])
        fail(op, "operand 2 has type " + in[2].str() + ", expected " + in[1].str() +
                     " (the type of operand 1)");
      return {in[1]};
    case OpKind::kClamp:
      expect_count(op, in, 3);
      for (int i : {0, 2})
        if (in[i] != in[1] && !(in[i].rank() == 0 && in[i].dtype == in[1].dtype))
          fail(op, "operand " + std::to_string(i) + " has type " + in[i].str() + ", expected " +
                       in[1].str() + " or a scalar of its element type");
      return {in[1]};
    case OpKind::kFma:
      expect_count(op, in, 3);
      for (int i : {1, 2})
        if (in[i] != in[0])
          fail(op, "operand " + std::to_string(i) + " has type " + in[i].str() + ", expected " +
                       in[0].str() + " (the type of operand 0)");
      if (!is_float(in[0].dtype))
        fail(op, "operands have type " + in[0].str() + ", expected floating-point elements");
      return {in[0]};
    case OpKind::kConstant:
      expect_count(op, in, 0);
      if (!op.literal.splat &&
          static_cast<std::int64_t>(op.literal.data.size()) != op.literal.type.byte_size())
        fail(op, "literal has " + std::to_string(op.literal.data.size()) + " bytes, expected " +
                     std::to_string(op.literal.type.byte_size()) + " for " + op.literal.type.str());
      return {op.literal.type};
    case OpKind::kIota: {
      expect_count(op, in, 0);
      const TensorType& r = declared_one(op, declared);
      if (op.dimension < 0 || op.dimension >= r.rank())
        fail(op,
             "iota_dimension " + std::to_string(op.dimension) + " is out of range for " + r.str());
      if (is_pred(r.dtype)) fail(op, "result " + r.str() + " must have numeric elements");
      return {r};
    }
    case OpKind::kBroadcastInDim: {
      expect_count(op, in, 1);
      const TensorType& r = declared_one(op, declared);
      const TensorType& x = in[0];
      if (r.dtype != x.dtype)
        fail(op,
             "result " + r.str() + " must have the element type of operand 0 (" + x.str() + ")");
      if (static_cast<int>(op.dims.size()) != x.rank())
        fail(op, "broadcast_dimensions " + dims_str(op.dims) + " has " +
                     std::to_string(op.dims.size()) + " entries, expected the operand rank " +
                     std::to_string(x.rank()));
      check_unique_dims(op, op.dims, r.rank(), "broadcast_dimensions");
      for (int i = 0; i < x.rank(); ++i)
        if (x.dims[i] != 1 && x.dims[i] != r.dims[op.dims[i]])
          fail(op, "operand dimension " + std::to_string(i) + " has size " +
                       std::to_string(x.dims[i]) + ", expected 1 or " +
                       std::to_string(r.dims[op.dims[i]]) + " (result dimension " +
                       std::to_string(op.dims[i]) + " of " + r.str() + ")");
      return {r};
    }
    case OpKind::kReshape: {
      expect_count(op, in, 1);
      const TensorType& r = declared_one(op, declared);
      if (r.dtype != in[0].dtype || r.num_elements() != in[0].num_elements())
        fail(op, "cannot reshape " + in[0].str() + " to " + r.str() +
                     " (element type and count must match)");
      return {r};
    }
    case OpKind::kTranspose: {
      expect_count(op, in, 1);
      const TensorType& x = in[0];
      if (static_cast<int>(op.dims.size()) != x.rank())
        fail(op, "permutation " + dims_str(op.dims) + " must have " + std::to_string(x.rank()) +
                     " entries for " + x.str());
      check_unique_dims(op, op.dims, x.rank(), "permutation");
      TensorType r(x.dtype, {});
      for (std::int64_t p : op.dims) r.dims.push_back(x.dims[p]);
      return {r};
    }
    case OpKind::kSlice: {
      expect_count(op, in, 1);
      const TensorType& x = in[0];
      const std::size_t n = static_cast<std::size_t>(x.rank());
      if (op.start_indices.size() != n || op.limit_indices.size() != n || op.strides.size() != n)
        fail(op, "start_indices, limit_indices and strides must each have " + std::to_string(n) +
                     " entries for " + x.str());
      TensorType r(x.dtype, {});
      for (std::size_t i = 0; i < n; ++i) {
        if (op.start_indices[i] < 0 || op.start_indices[i] > op.limit_indices[i] ||
            op.limit_indices[i] > x.dims[i] || op.strides[i] < 1)
          fail(op, "dimension " + std::to_string(i) + ": slice [" +
                       std::to_string(op.start_indices[i]) + ":" +
                       std::to_string(op.limit_indices[i]) + ":" + std::to_string(op.strides[i]) +
                       "] is invalid for size " + std::to_string(x.dims[i]) +
                       " (need 0 <= start <= limit <= size, stride >= 1)");
        r.dims.push_back((op.limit_indices[i] - op.start_indices[i] + op.strides[i] - 1) /
                         op.strides[i]);
      }
      return {r};
    }
    case OpKind::kDynamicSlice: {
      if (in.empty()) expect_count(op, in, 1);
      const TensorType& x = in[0];
      expect_count(op, in, 1 + static_cast<std::size_t>(x.rank()));
      for (std::size_t i = 1; i < in.size(); ++i) check_scalar_int(op, in, i);
      if (static_cast<int>(op.dims.size()) != x.rank())
        fail(op, "slice_sizes " + dims_str(op.dims) + " must have " + std::to_string(x.rank()) +
                     " entries for " + x.str());
      for (int i = 0; i < x.rank(); ++i)
        if (op.dims[i] < 0 || op.dims[i] > x.dims[i])
          fail(op, "slice size " + std::to_string(op.dims[i]) + " in dimension " +
                       std::to_string(i) + " exceeds " + x.str());
      return {TensorType(x.dtype, op.dims)};
    }
    case OpKind::kDynamicUpdateSlice: {
      if (in.size() < 2) expect_count(op, in, 2);
      const TensorType &x = in[0], &u = in[1];
      expect_count(op, in, 2 + static_cast<std::size_t>(x.rank()));
      if (u.dtype != x.dtype || u.rank() != x.rank())
        fail(op, "operand 1 (update) has type " + u.str() +
                     ", expected the element type and rank of " + x.str());
      for (int i = 0; i < x.rank(); ++i)
        if (u.dims[i] > x.dims[i])
          fail(op, "operand 1 (update) " + u.str() + " is larger than operand 0 " + x.str() +
                       " in dimension " + std::to_string(i));
      for (std::size_t i = 2; i < in.size(); ++i) check_scalar_int(op, in, i);
      return {x};
    }
    case OpKind::kConcatenate: {
      if (in.empty()) fail(op, "expected at least one operand");
      const TensorType& x = in[0];
      if (op.dimension < 0 || op.dimension >= x.rank())
        fail(op, "dimension " + std::to_string(op.dimension) + " is out of range for " + x.str());
      TensorType r = x;
      for (std::size_t i = 1; i < in.size(); ++i) {
        bool ok = in[i].dtype == x.dtype && in[i].rank() == x.rank();
        for (int d = 0; ok && d < x.rank(); ++d)
          ok = d == op.dimension || in[i].dims[d] == x.dims[d];
        if (!ok)
          fail(op, "operand " + std::to_string(i) + " has type " + in[i].str() +
                       ", expected the type of operand 0 (" + x.str() + ") except in dimension " +
                       std::to_string(op.dimension));
        r.dims[op.dimension] += in[i].dims[op.dimension];
      }
      return {r};
    }
    case OpKind::kPad: {
      expect_count(op, in, 2);
      const TensorType &x = in[0], &pv = in[1];
      if (pv.rank() != 0 || pv.dtype != x.dtype)
        fail(op, "operand 1 (padding value) has type " + pv.str() + ", expected " +
                     TensorType(x.dtype, {}).str());
      const std::size_t n = static_cast<std::size_t>(x.rank());
      if (op.edge_padding_low.size() != n || op.edge_padding_high.size() != n ||
          op.interior_padding.size() != n)
        fail(op, "edge_padding_low, edge_padding_high and interior_padding must each have " +
                     std::to_string(n) + " entries for " + x.str());
      TensorType r(x.dtype, {});
      for (std::size_t i = 0; i < n; ++i) {
        if (op.interior_padding[i] < 0)
          fail(op, "interior_padding " + dims_str(op.interior_padding) + " must not be negative");
        const std::int64_t d = x.dims[i];
        const std::int64_t s = op.edge_padding_low[i] + op.edge_padding_high[i] + d +
                               (d > 0 ? (d - 1) * op.interior_padding[i] : 0);
        if (s < 0) fail(op, "padding gives a negative size in dimension " + std::to_string(i));
        r.dims.push_back(s);
      }
      return {r};
    }
    case OpKind::kReverse:
      expect_count(op, in, 1);
      check_unique_dims(op, op.dims, in[0].rank(), "dimensions");
      return {in[0]};
    case OpKind::kReduce:
      return infer_reduce(op, in);
    case OpKind::kDotGeneral:
      return infer_dot(op, in, declared);
    case OpKind::kConvolution:
      expect_count(op, in, 2);
      try {
        return {infer_convolution_type(op.conv, in[0], in[1])};
      } catch (const Error& e) {
        fail(op, e.what());
      }
    case OpKind::kGather:
      return infer_gather(op, in);
    case OpKind::kScatter:
      return infer_scatter(op, in);
    case OpKind::kSort: {
      if (in.empty()) fail(op, "expected at least one operand");
      if (op.dimension < 0 || op.dimension >= in[0].rank())
        fail(op,
             "dimension " + std::to_string(op.dimension) + " is out of range for " + in[0].str());
      for (std::size_t i = 1; i < in.size(); ++i)
        if (in[i].dims != in[0].dims)
          fail(op, "operand " + std::to_string(i) + " has type " + in[i].str() +
                       ", expected the shape of operand 0 (" + in[0].str() + ")");
      if (op.regions.size() != 1) fail(op, "expected one comparator region");
      const Block& body = *op.regions[0];
      if (body.args.size() != 2 * in.size() || body.results.size() != 1 ||
          body.type(body.results[0]) != TensorType(DType::kPred, {}))
        fail(op, "the comparator must take " + std::to_string(2 * in.size()) +
                     " scalar arguments and return tensor<i1>");
      return in;
    }
    case OpKind::kRngBitGenerator: {
      expect_count(op, in, 1);
      if (!declared || declared->size() != 2)
        fail(op, "the result types (new state, output) must be given");
      if ((*declared)[0] != in[0])
        fail(op, "result 0 (new state) has type " + (*declared)[0].str() +
                     ", expected the state type " + in[0].str());
      if (in[0].rank() != 1 || !(in[0].dtype == DType::kU64 || in[0].dtype == DType::kU32 ||
                                 in[0].dtype == DType::kI64 || in[0].dtype == DType::kI32))
        fail(op, "operand 0 (state) has type " + in[0].str() +
                     ", expected a 1-d tensor of 32- or 64-bit integers");
      if (!is_integer((*declared)[1].dtype) && !is_float((*declared)[1].dtype))
        fail(op, "result 1 (output) has type " + (*declared)[1].str() +
                     ", expected integer or float elements");
      return *declared;
    }
    case OpKind::kBitcastConvert: {
      expect_count(op, in, 1);
      if (!declared || declared->size() != 1) fail(op, "the result type must be given");
      const TensorType& r = (*declared)[0];
      if (r.dims != in[0].dims || dtype_size(r.dtype) != dtype_size(in[0].dtype) ||
          is_complex(r.dtype) || is_complex(in[0].dtype))
        fail(op, "result type " + r.str() + " must have the shape and element width of " +
                     in[0].str() + " (a change of element width is not supported)");
      return *declared;
    }
    case OpKind::kCustomCall:
      if (!declared) fail(op, "the result types must be given");
      if (op.call_target_name.empty()) fail(op, "call_target_name is empty");
      return *declared;
    default:
      break;
  }
  fail(op, "cannot infer the result types of this op");
}

void verify_op(const Block& block, const Op& op) {
  std::vector<TensorType> in;
  for (std::size_t i = 0; i < op.operands.size(); ++i) {
    const int v = op.operands[i];
    if (v < 0 || v >= static_cast<int>(block.types.size()))
      fail(op, "operand " + std::to_string(i) + " refers to an undefined value");
    in.push_back(block.types[v]);
  }
  std::vector<TensorType> declared;
  for (int r : op.results) declared.push_back(block.type(r));
  const std::vector<TensorType> inferred = infer_result_types(op, in, &declared);
  if (inferred.size() != declared.size())
    fail(op, "has " + std::to_string(declared.size()) + " results, expected " +
                 std::to_string(inferred.size()));
  for (std::size_t i = 0; i < inferred.size(); ++i)
    if (inferred[i] != declared[i])
      fail(op, "result " + std::to_string(i) + " has type " + declared[i].str() + ", expected " +
                   inferred[i].str());
  for (const auto& region : op.regions) verify_block(*region);
}

void verify_block(const Block& block) {
  std::vector<bool> defined(block.types.size(), false);
  for (int a : block.args) defined.at(a) = true;
  for (const Op& op : block.ops) {
    for (std::size_t i = 0; i < op.operands.size(); ++i) {
      const int v = op.operands[i];
      if (v < 0 || v >= static_cast<int>(defined.size()) || !defined[v])
        fail(op, "operand " + std::to_string(i) + " uses a value that is not defined before it");
    }
    verify_op(block, op);
    for (int r : op.results) defined.at(r) = true;
  }
  for (int r : block.results)
    if (r < 0 || r >= static_cast<int>(defined.size()) || !defined[r])
      throw Error("return: a returned value is not defined");
}

void verify_module(const Module& module) {
  const Block& b = module.main;
  verify_block(b);
  if (!b.donation.empty() && b.donation.size() != b.args.size())
    throw Error("the main function has " + std::to_string(b.args.size()) +
                " arguments but donation attributes for " + std::to_string(b.donation.size()));
  for (std::size_t i = 0; i < b.donation.size(); ++i) {
    const int d = b.donation[i];
    if (d == Block::kNotDonated || d == Block::kAnyResult) continue;
    if (d < 0 || static_cast<std::size_t>(d) >= b.results.size())
      throw Error("argument " + std::to_string(i) +
                  " has tf.aliasing_output = " + std::to_string(d) + ", but the function returns " +
                  std::to_string(b.results.size()) + " values");
    if (b.type(b.args[i]) != b.type(b.results[static_cast<std::size_t>(d)]))
      throw Error("argument " + std::to_string(i) + " (" + b.type(b.args[i]).str() +
                  ") has tf.aliasing_output = " + std::to_string(d) + ", a result of type " +
                  b.type(b.results[static_cast<std::size_t>(d)]).str() +
                  "; an argument can only be donated to a result of its own type");
  }
}

}  // namespace vtrn::hlo
