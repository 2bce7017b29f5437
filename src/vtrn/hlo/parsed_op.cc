#include "vtrn/hlo/parsed_op.h"

#include <initializer_list>

#include "vtrn/hlo/convolution.h"
#include "vtrn/hlo/syntax.h"
#include "vtrn/hlo/verify.h"

namespace vtrn::hlo {
namespace {

// The builder's helpers raise their errors through the parser's text, so that they name the
// line and column of the op.
class ParsedOpBuilder {
 public:
  explicit ParsedOpBuilder(const AttributeParser& text) : text_(text) {}

  // The first of |names| present (the generic name, then the pretty form's keyword).
  std::vector<std::int64_t> need_ints(const ParsedOp& r,
                                      std::initializer_list<std::string_view> names,
                                      bool required = true) const {
    for (std::string_view n : names)
      if (const Attr* a = r.attr(n)) return ints_of(*a, std::string(n), r.pos);
    if (required)
      error(r.name + ": missing attribute '" + std::string(*names.begin()) + "'", r.pos);
    return {};
  }

  std::int64_t need_int(const ParsedOp& r, std::initializer_list<std::string_view> names,
                        std::optional<std::int64_t> def = std::nullopt) const {
    for (std::string_view n : names)
      if (const Attr* a = r.attr(n)) {
        if (a->kind != Attr::kInt)
          error(r.name + ": attribute '" + std::string(n) + "' must be an integer", r.pos);
        return a->i;
      }
    if (def) return *def;
    error(r.name + ": missing attribute '" + std::string(*names.begin()) + "'", r.pos);
  }

  static bool get_bool(const ParsedOp& r, std::string_view n) {
    const Attr* a = r.attr(n);
    return a && (a->kind == Attr::kBool || a->kind == Attr::kInt) && a->i;
  }

  std::vector<std::int64_t> struct_ints(const ParsedOp& r, const Attr& st,
                                        std::string_view field) const {
    if (const Attr* f = st.field(field)) return ints_of(*f, std::string(field), r.pos);
    return {};
  }

  // The integers of a list, a list of lists (the pretty `pad = [[lo, hi], ...]`) or a dense
  // literal, in order.
  std::vector<std::int64_t> flat_ints(const ParsedOp& r, const Attr& a,
                                      std::string_view what) const {
    if (a.kind != Attr::kList) return ints_of(a, std::string(what), r.pos);
    std::vector<std::int64_t> v;
    for (const Attr& item : a.items) {
      const std::vector<std::int64_t> part = flat_ints(r, item, what);
      v.insert(v.end(), part.begin(), part.end());
    }
    return v;
  }

  // stablehlo.convolution's attributes, from the generic form or the pretty `dim_numbers = ...,
  // window = {...}`; absent window attributes take their defaults (stride, dilation 1, no
  // padding).
  ConvAttrs convolution_attrs(const ParsedOp& r, const std::vector<TensorType>& in) const {
    namespace s = syntax;
    const std::string& n = r.name;
    if (in.size() != 2) error(n + ": expected two operands (input and kernel)", r.pos);
    const std::size_t spatial = in[0].rank() >= 2 ? static_cast<std::size_t>(in[0].rank() - 2) : 0;
    ConvAttrs c;
    const Attr* d = r.attr(s::kConvDimensionNumbers);
    if (!d) d = r.attr(s::kPrettyDimNumbers);
    if (!d || d->kind != Attr::kConvDims)
      error(n + ": missing 'dimension_numbers = #stablehlo.conv<...>'", r.pos);
    try {
      c.dims = parse_conv_dimension_numbers(d->s);
    } catch (const Error& e) {
      error(n + ": " + e.what(), r.pos);
    }
    const Attr* window = r.attr(s::kPrettyWindow);
    if (window && window->kind != Attr::kDict)
      error(n + ": 'window' must be a dictionary {stride = [...], pad = [...], ...}", r.pos);
    auto field = [&](std::string_view generic, std::string_view pretty) -> const Attr* {
      if (const Attr* a = r.attr(generic)) return a;
      return window ? window->field(pretty) : nullptr;
    };
    auto window_ints = [&](std::string_view generic, std::string_view pretty, std::size_t count,
                           std::int64_t fill) {
      const Attr* a = field(generic, pretty);
      if (!a) return std::vector<std::int64_t>(count, fill);
      return flat_ints(r, *a, generic);
    };
    c.window_strides = window_ints(s::kWindowStrides, s::kPrettyStride, spatial, 1);
    c.lhs_dilation = window_ints(s::kLhsDilation, s::kPrettyLhsDilate, spatial, 1);
    c.rhs_dilation = window_ints(s::kRhsDilation, s::kPrettyRhsDilate, spatial, 1);
    const std::vector<std::int64_t> pad = window_ints(s::kPadding, s::kPrettyPad, 2 * spatial, 0);
    if (pad.size() != 2 * spatial)
      error(n + ": padding has " + std::to_string(pad.size()) + " values, expected " +
                std::to_string(2 * spatial) + " (a [low, high] pair per spatial dim)",
            r.pos);
    for (std::size_t k = 0; k < spatial; ++k) {
      c.padding_low.push_back(pad[2 * k]);
      c.padding_high.push_back(pad[2 * k + 1]);
    }
    if (const Attr* rev = field(s::kWindowReversal, s::kPrettyReverse))
      for (const Attr& item : rev->items)
        if (item.i != 0)
          error(n + ": window_reversal is not supported by vtrn; reverse the kernel with "
                    "stablehlo.reverse instead",
                r.pos);
    c.feature_group_count = need_int(r, {s::kFeatureGroupCount}, 1);
    c.batch_group_count = need_int(r, {s::kBatchGroupCount}, 1);
    return c;
  }

  std::vector<int> build(const ParsedOp& r, Block& b) const {
    Op op;
    op.kind = r.kind;
    op.operands = r.operands;
    op.regions = r.regions;
    std::vector<TensorType> in;
    for (int v : r.operands) in.push_back(b.type(v));
    const std::string& n = r.name;
    if (const Attr* a = r.attr(syntax::kVtrnMath)) {
      const bool dot = r.kind == OpKind::kDotGeneral, reduce = r.kind == OpKind::kReduce;
      const std::string_view want = dot      ? syntax::kVtrnMathSgemm
                                    : reduce ? syntax::kVtrnMathCascadeSum
                                             : syntax::kVtrnMathVml;
      // The second value a reduce (vec_sum) or an exponential (sleef) may carry instead.
      const bool exp = r.kind == OpKind::kExp;
      const std::string_view other = reduce ? syntax::kVtrnMathVecSum
                                     : exp  ? syntax::kVtrnMathSleef
                                            : std::string_view();
      const bool is_other = !other.empty() && a->kind == Attr::kString && a->s == other;
      if (!is_other && (a->kind != Attr::kString || a->s != want))
        error(n + ": " + std::string(syntax::kVtrnMath) + " must be \"" + std::string(want) + "\"" +
                  (other.empty() ? "" : " or \"" + std::string(other) + "\""),
              r.pos);
      (dot                  ? op.sgemm
       : reduce && is_other ? op.vec_sum
       : reduce             ? op.cascade_sum
       : is_other           ? op.sleef
                            : op.vml) = true;  // verify.cc checks the op may carry it
    }
    switch (r.kind) {
      case OpKind::kCompare: {
        std::string dir, type;
        if (const Attr* a = r.attr(syntax::kComparisonDirection)) dir = a->s;
        if (const Attr* a = r.attr(syntax::kCompareType)) type = a->s;
        if (!r.positional.empty()) dir = r.positional[0];
        if (r.positional.size() > 1) type = r.positional[1];
        const std::optional<Comparison> comparison = comparison_from_name(dir);
        if (!comparison)
          error(n + ": comparison direction '" + dir + "' is not one of EQ, NE, GE, GT, LE, LT",
                r.pos);
        op.comparison = *comparison;
        if (!type.empty()) {
          const std::optional<CompareType> compare_type = compare_type_from_name(type);
          if (!compare_type)
            error(n + ": compare type '" + type +
                      "' is not one of FLOAT, TOTALORDER, SIGNED, UNSIGNED",
                  r.pos);
          op.compare_type = *compare_type;
        }
        break;
      }
      case OpKind::kConstant: {
        const Attr* v = r.attr(syntax::kValue);
        if (!v || v->kind != Attr::kDense) error(n + ": missing dense 'value' attribute", r.pos);
        TensorType t =
            v->dense_type ? *v->dense_type : (r.out_types.empty() ? TensorType() : r.out_types[0]);
        op.literal = make_literal(*v->dense, t);
        break;
      }
      case OpKind::kIota:
        op.dimension = need_int(r, {syntax::kIotaDimension, "dim"});
        break;
      case OpKind::kBroadcastInDim:
        op.dims = need_ints(r, {syntax::kBroadcastDimensions, "dims"});
        break;
      case OpKind::kTranspose:
        op.dims = need_ints(r, {syntax::kPermutation, "dims"});
        break;
      case OpKind::kReverse:
      case OpKind::kReduce:
        op.dims = need_ints(r, {syntax::kDimensions, "dims"});
        break;
      case OpKind::kSlice:
        if (r.has_slice_spec) {
          op.start_indices = r.slice_start;
          op.limit_indices = r.slice_limit;
          op.strides = r.slice_strides;
        } else {
          op.start_indices = need_ints(r, {syntax::kStartIndices});
          op.limit_indices = need_ints(r, {syntax::kLimitIndices});
          op.strides = need_ints(r, {syntax::kStrides}, false);
          if (op.strides.empty()) op.strides.assign(op.start_indices.size(), 1);
        }
        break;
      case OpKind::kDynamicSlice:
        op.dims = need_ints(r, {syntax::kSliceSizes, "sizes"});
        break;
      case OpKind::kConcatenate:
        op.dimension = need_int(r, {syntax::kDimension, "dim"});
        break;
      case OpKind::kPad:
        op.edge_padding_low = need_ints(r, {syntax::kEdgePaddingLow, "low"});
        op.edge_padding_high = need_ints(r, {syntax::kEdgePaddingHigh, "high"});
        op.interior_padding = need_ints(r, {syntax::kInteriorPadding, "interior"});
        break;
      case OpKind::kDotGeneral:
        if (r.is_dot) {
          if (in.size() != 2 || in[0].rank() < 1 || in[1].rank() < 1)
            error(n + ": expected two operands of rank 1 or 2", r.pos);
          op.dot.lhs_contracting = {in[0].rank() - 1};
          op.dot.rhs_contracting = {0};
        } else if (const Attr* d = r.attr(syntax::kDotDimensionNumbers)) {
          op.dot.lhs_batch = struct_ints(r, *d, syntax::kLhsBatchingDimensions);
          op.dot.rhs_batch = struct_ints(r, *d, syntax::kRhsBatchingDimensions);
          op.dot.lhs_contracting = struct_ints(r, *d, syntax::kLhsContractingDimensions);
          op.dot.rhs_contracting = struct_ints(r, *d, syntax::kRhsContractingDimensions);
        } else {
          op.dot.lhs_batch = need_ints(r, {"batching_dims_lhs"}, false);
          op.dot.rhs_batch = need_ints(r, {"batching_dims_rhs"}, false);
          op.dot.lhs_contracting = need_ints(r, {"contracting_dims_lhs"});
          op.dot.rhs_contracting = need_ints(r, {"contracting_dims_rhs"});
        }
        break;
      case OpKind::kConvolution:
        op.conv = convolution_attrs(r, in);
        break;
      case OpKind::kGather: {
        const Attr* d = r.attr(syntax::kGatherDimensionNumbers);
        if (!d || d->kind != Attr::kStruct)
          error(n + ": missing 'dimension_numbers = #stablehlo.gather<...>'", r.pos);
        if (d->field(syntax::kOperandBatchingDims) &&
            !struct_ints(r, *d, syntax::kOperandBatchingDims).empty())
          error(n + ": operand_batching_dims are not supported by vtrn", r.pos);
        op.gather.offset_dims = struct_ints(r, *d, syntax::kOffsetDims);
        op.gather.collapsed_slice_dims = struct_ints(r, *d, syntax::kCollapsedSliceDims);
        op.gather.start_index_map = struct_ints(r, *d, syntax::kStartIndexMap);
        const Attr* ivd = d->field(syntax::kIndexVectorDim);
        op.gather.index_vector_dim = ivd ? ivd->i : 0;
        op.dims = need_ints(r, {syntax::kSliceSizes});
        op.indices_are_sorted = get_bool(r, syntax::kIndicesAreSorted);
        break;
      }
      case OpKind::kScatter: {
        const Attr* d = r.attr(syntax::kScatterDimensionNumbers);
        if (!d || d->kind != Attr::kStruct)
          error(n + ": missing 'scatter_dimension_numbers = #stablehlo.scatter<...>'", r.pos);
        if (d->field(syntax::kInputBatchingDims) &&
            !struct_ints(r, *d, syntax::kInputBatchingDims).empty())
          error(n + ": input_batching_dims are not supported by vtrn", r.pos);
        op.scatter.update_window_dims = struct_ints(r, *d, syntax::kUpdateWindowDims);
        op.scatter.inserted_window_dims = struct_ints(r, *d, syntax::kInsertedWindowDims);
        op.scatter.scatter_dims_to_operand_dims =
            struct_ints(r, *d, syntax::kScatterDimsToOperandDims);
        const Attr* ivd = d->field(syntax::kIndexVectorDim);
        op.scatter.index_vector_dim = ivd ? ivd->i : 0;
        op.indices_are_sorted = get_bool(r, syntax::kIndicesAreSorted);
        op.unique_indices = get_bool(r, syntax::kUniqueIndices);
        if (op.regions.size() == 1 && match_scatter_region(*op.regions[0]) == ScatterKind::kOther)
          error(n + ": the update region must return the update (replace) or add the two "
                    "arguments; other update functions are not supported by vtrn",
                r.pos);
        break;
      }
      case OpKind::kSort: {
        op.dimension = need_int(r, {syntax::kDimension}, -1);
        if (op.dimension < 0 && !in.empty()) op.dimension += in[0].rank();
        op.is_stable = get_bool(r, syntax::kIsStable);
        break;
      }
      case OpKind::kRngBitGenerator: {
        const Attr* a = r.attr(syntax::kRngAlgorithm);
        if (!a) a = r.attr("algorithm");
        const std::string name = a ? a->s : std::string(rng_algorithm_name(RngAlgorithm::kDefault));
        const std::optional<RngAlgorithm> algorithm = rng_algorithm_from_name(name);
        if (!algorithm)
          error(n + ": rng algorithm '" + name + "' is not one of DEFAULT, THREE_FRY, PHILOX",
                r.pos);
        op.rng_algorithm = *algorithm;
        break;
      }
      case OpKind::kCustomCall: {
        const Attr* t = r.attr(syntax::kCallTargetName);
        if (!t || t->kind != Attr::kString) error(n + ": missing call_target_name", r.pos);
        op.call_target_name = t->s;
        if (const Attr* c = r.attr(syntax::kBackendConfig); c && c->kind == Attr::kString)
          op.backend_config = c->s;
        break;
      }
      default:
        break;
    }
    if (r.kind == OpKind::kReduce) {
      if (r.applies) {
        const std::size_t ninputs = in.size() / 2;
        if (ninputs != 1)
          error(n + ": 'applies' with several inputs is not supported by vtrn", r.pos);
        op.regions = {make_reduce_region(*r.applies, in[0].dtype)};
      }
      // Any reducer of elementwise ops runs (argmax and argmin are two-input reduces whose
      // reducer compares and selects); others are refused here rather than when it runs.
      for (const auto& region : op.regions)
        for (const Op& rop : region->ops)
          if (!(rop.kind == OpKind::kConstant || rop.kind == OpKind::kConvert ||
                rop.kind == OpKind::kCompare || rop.kind == OpKind::kSelect ||
                is_unary_elementwise(rop.kind) || is_binary_elementwise(rop.kind)))
            error(n + ": the reducer holds stablehlo." + std::string(op_name(rop.kind)) +
                      "; vtrn runs reducers of elementwise ops, compare, select, convert and "
                      "constants",
                  r.pos);
    }
    if (r.kind == OpKind::kSort && op.regions.size() == 1) {
      int key;
      bool desc;
      if (!match_sort_region(*op.regions[0], &key, &desc))
        error(n + ": the comparator must be a single 'compare LT' or 'compare GT' of one operand's "
                  "two arguments; other comparators are not supported by vtrn",
              r.pos);
    }

    // Types after the colon.
    std::vector<TensorType> declared;
    const std::vector<TensorType>* decl = nullptr;
    if (r.functional) {
      if (r.in_types.size() != in.size())
        error(n + ": the type lists " + std::to_string(r.in_types.size()) +
                  " operand type(s) for " + std::to_string(in.size()) + " operand(s)",
              r.pos);
      for (std::size_t i = 0; i < in.size(); ++i)
        if (r.in_types[i] != in[i])
          error(n + ": operand " + std::to_string(i) +
                    (i < r.operand_names.size() ? " (" + r.operand_names[i] + ")" : "") +
                    " has type " + in[i].str() + ", but the op's type says " + r.in_types[i].str(),
                r.pos);
      declared = r.out_types;
      decl = &declared;
    } else if (r.kind == OpKind::kConstant) {
      declared = r.out_types;
      decl = &declared;
    } else if (r.have_types) {
      // Pretty short form: `: T` (operands and result), or `: tensor<i1>, T` for select.
      std::vector<TensorType> expect_in;
      if (r.kind == OpKind::kSelect && r.in_types.size() == 2) {
        expect_in = {r.in_types[0], r.in_types[1], r.in_types[1]};
      } else if (r.in_types.size() == 1) {
        expect_in.assign(in.size(), r.in_types[0]);
        if (in.empty() || r.kind == OpKind::kCompare) {
          // iota etc.: the type is the result's.
        }
      } else {
        error(n + ": expected ': T' or ': (operand types) -> result type'", r.pos);
      }
      if (in.empty()) {
        declared = {r.in_types[0]};
        decl = &declared;
      } else {
        for (std::size_t i = 0; i < in.size(); ++i)
          if (expect_in[i] != in[i] && !(r.kind == OpKind::kClamp && in[i].rank() == 0))
            error(n + ": operand " + std::to_string(i) +
                      (i < r.operand_names.size() ? " (" + r.operand_names[i] + ")" : "") +
                      " has type " + in[i].str() + ", but the op's type says " + expect_in[i].str(),
                  r.pos);
        if (r.kind != OpKind::kCompare && r.kind != OpKind::kSelect && r.kind != OpKind::kClamp) {
          declared = {expect_in.empty() ? r.in_types[0] : r.in_types.back()};
          decl = &declared;
        }
      }
    }
    std::vector<TensorType> out;
    try {
      out = infer_result_types(op, in, decl);
    } catch (const Error& e) {
      error(e.what(), r.pos);
    }
    if (decl) {
      if (decl->size() != out.size())
        error(n + ": the type lists " + std::to_string(decl->size()) + " result(s), expected " +
                  std::to_string(out.size()),
              r.pos);
      for (std::size_t i = 0; i < out.size(); ++i)
        if ((*decl)[i] != out[i])
          error(n + ": result " + std::to_string(i) + " has type " + (*decl)[i].str() +
                    ", expected " + out[i].str(),
                r.pos);
    }
    for (TensorType& t : out) op.results.push_back(b.add_value(t));
    std::vector<int> res = op.results;
    b.ops.push_back(std::move(op));
    return res;
  }

 private:
  [[noreturn]] void error(const std::string& msg, std::size_t at) const { text_.error(msg, at); }
  std::vector<std::int64_t> ints_of(const Attr& a, const std::string& what, std::size_t pos) const {
    return text_.ints_of(a, what, pos);
  }
  Literal make_literal(const DenseBody& body, const TensorType& type) const {
    return text_.make_literal(body, type);
  }

  const AttributeParser& text_;
};

}  // namespace

std::vector<int> build_parsed_op(const ParsedOp& op, Block& block, const AttributeParser& text) {
  if (op.name == "stablehlo.reduce_window") return decompose_reduce_window(op, block, text);
  // GSPMD's sharding annotations (jax.lax.with_sharding_constraint without Shardy) change
  // where a value lives, not what it is: on one device they are the value itself.
  if (op.kind == OpKind::kCustomCall && op.operands.size() == 1 && op.out_types.size() == 1 &&
      op.out_types[0] == block.type(op.operands[0])) {
    const Attr* t = op.attr(syntax::kCallTargetName);
    if (t &&
        (t->s == "Sharding" || t->s == "SPMDFullToShardShape" || t->s == "SPMDShardToFullShape"))
      return {op.operands[0]};
  }
  return ParsedOpBuilder(text).build(op, block);
}

}  // namespace vtrn::hlo
