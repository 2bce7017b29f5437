#include "vtrn/hlo/printer.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string_view>

#include "vtrn/hlo/convolution.h"
#include "vtrn/hlo/syntax.h"

namespace vtrn::hlo {
namespace {

std::string ints(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s;
}

std::string array_attr(const std::vector<std::int64_t>& v) {
  return v.empty() ? "array<i64>" : "array<i64: " + ints(v) + ">";
}

std::string list(const std::vector<std::int64_t>& v) { return "[" + ints(v) + "]"; }

std::string boolean(bool b) { return b ? "true" : "false"; }

// `name = value`
std::string attr(std::string_view name, const std::string& value) {
  return std::string(name) + " = " + value;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "\\%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

template <typename F>
std::string shortest(F v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string hex_bits(std::uint64_t bits, int bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llX", bytes * 2, static_cast<unsigned long long>(bits));
  return buf;
}

std::string element(const Literal& lit, std::int64_t i) {
  const DType d = lit.type.dtype;
  const std::uint8_t* p = lit.data.data() + (lit.splat ? 0 : i) * dtype_size(d);
  switch (d) {
    case DType::kPred:
      return *p ? "true" : "false";
    case DType::kU64: {
      std::uint64_t u;
      std::memcpy(&u, p, 8);
      return std::to_string(u);
    }
    case DType::kC64: {
      float c[2];
      std::memcpy(c, p, 8);
      auto part = [](float f) {
        return std::isfinite(f) ? shortest(f) : hex_bits(float_bits(f), 4);
      };
      return "(" + part(c[0]) + "," + part(c[1]) + ")";
    }
    case DType::kF16:
    case DType::kBF16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      const float f = d == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      return std::isfinite(f) ? shortest(f) : hex_bits(h, 2);
    }
    case DType::kF32: {
      float f;
      std::memcpy(&f, p, 4);
      return std::isfinite(f) ? shortest(f) : hex_bits(float_bits(f), 4);
    }
    case DType::kF64: {
      double f;
      std::memcpy(&f, p, 8);
      std::uint64_t u;
      std::memcpy(&u, p, 8);
      return std::isfinite(f) ? shortest(f) : hex_bits(u, 8);
    }
    default:
      return std::to_string(lit.get_int(i));
  }
}

void nested(const Literal& lit, int dim, std::int64_t& idx, std::string& out) {
  if (dim == lit.type.rank()) {
    out += element(lit, idx++);
    return;
  }
  out += '[';
  for (std::int64_t i = 0; i < lit.type.dims[dim]; ++i) {
    if (i) out += ", ";
    nested(lit, dim + 1, idx, out);
  }
  out += ']';
}

class Printer {
 public:
  std::string run(const Module& m) {
    out_ = "module";
    if (!m.name.empty()) out_ += " @" + symbol(m.name);
    out_ += " {\n  func.func @main(";
    const Block& b = m.main;
    Names& names = scopes_[&b];
    for (std::size_t i = 0; i < b.args.size(); ++i) {
      if (i) out_ += ", ";
      const std::string n = "%arg" + std::to_string(next_arg_++);
      names[b.args[i]] = n;
      out_ += n + ": " + b.type(b.args[i]).str();
      const int d = i < b.donation.size() ? b.donation[i] : Block::kNotDonated;
      if (d == Block::kAnyResult) out_ += " {jax.buffer_donor = true}";
      if (d >= 0) out_ += " {tf.aliasing_output = " + std::to_string(d) + " : i32}";
    }
    out_ += ") -> (";
    for (std::size_t i = 0; i < b.results.size(); ++i) {
      if (i) out_ += ", ";
      out_ += b.type(b.results[i]).str();
    }
    out_ += ") {\n";
    body(b, "    ");
    out_ += "    return";
    for (std::size_t i = 0; i < b.results.size(); ++i)
      out_ += (i ? ", " : " ") + name(b, b.results[i]);
    if (!b.results.empty()) out_ += " : " + types(b, b.results);
    out_ += "\n  }\n}\n";
    return out_;
  }

 private:
  using Names = std::map<int, std::string>;

  static std::string symbol(const std::string& s) {
    bool plain = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
    for (char c : s)
      plain = plain &&
              (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$');
    return plain ? s : quote(s);
  }

  std::string name(const Block& b, int v) { return scopes_[&b].at(v); }

  std::string types(const Block& b, const std::vector<int>& vs) {
    std::string s;
    for (std::size_t i = 0; i < vs.size(); ++i) {
      if (i) s += ", ";
      s += b.type(vs[i]).str();
    }
    return s;
  }

  void body(const Block& b, const std::string& indent) {
    for (const Op& op : b.ops) {
      out_ += indent;
      Names& names = scopes_[&b];
      const int id = next_value_++;
      if (op.results.size() == 1) {
        names[op.results[0]] = "%" + std::to_string(id);
        out_ += "%" + std::to_string(id) + " = ";
      } else if (op.results.size() > 1) {
        for (std::size_t i = 0; i < op.results.size(); ++i)
          names[op.results[i]] = "%" + std::to_string(id) + "#" + std::to_string(i);
        out_ += "%" + std::to_string(id) + ":" + std::to_string(op.results.size()) + " = ";
      }
      print_op(b, op, indent);
      out_ += '\n';
    }
  }

  void print_op(const Block& b, const Op& op, const std::string& indent) {
    const bool same_types = [&] {
      for (int v : op.operands)
        if (b.type(v) != b.type(op.results[0])) return false;
      return true;
    }();
    if ((is_unary_elementwise(op.kind) || is_binary_elementwise(op.kind) ||
         op.kind == OpKind::kFma) &&
        op.kind != OpKind::kConvert && same_types) {
      out_ += qualified_op_name(op.kind);
      for (std::size_t i = 0; i < op.operands.size(); ++i)
        out_ += (i ? ", " : " ") + name(b, op.operands[i]);
      const std::string a = attrs(op);
      if (!a.empty()) out_ += " {" + a + "}";
      out_ += " : " + b.type(op.results[0]).str();
      return;
    }
    out_ += "\"" + qualified_op_name(op.kind) + "\"(";
    for (std::size_t i = 0; i < op.operands.size(); ++i)
      out_ += (i ? ", " : "") + name(b, op.operands[i]);
    out_ += ")";
    if (!op.regions.empty()) {
      out_ += " (";
      for (std::size_t r = 0; r < op.regions.size(); ++r) {
        if (r) out_ += ", ";
        region(*op.regions[r], indent);
      }
      out_ += ")";
    }
    const std::string a = attrs(op);
    if (!a.empty()) out_ += " {" + a + "}";
    out_ += " : (" + types(b, op.operands) + ") -> ";
    if (op.results.size() == 1)
      out_ += b.type(op.results[0]).str();
    else
      out_ += "(" + types(b, op.results) + ")";
  }

  void region(const Block& r, const std::string& indent) {
    out_ += "{\n" + indent + "^bb0(";
    Names& names = scopes_[&r];
    for (std::size_t i = 0; i < r.args.size(); ++i) {
      if (i) out_ += ", ";
      const std::string n = "%arg" + std::to_string(next_arg_++);
      names[r.args[i]] = n;
      out_ += n + ": " + r.type(r.args[i]).str();
    }
    out_ += "):\n";
    body(r, indent + "  ");
    out_ += indent + "  \"stablehlo.return\"(";
    for (std::size_t i = 0; i < r.results.size(); ++i)
      out_ += (i ? ", " : "") + name(r, r.results[i]);
    out_ += ") : (" + types(r, r.results) + ") -> ()\n" + indent + "}";
  }

  static std::string attrs(const Op& op) {
    namespace s = syntax;
    if (op.vml) return attr(s::kVtrnMath, quote(std::string(s::kVtrnMathVml)));
    if (op.sleef) return attr(s::kVtrnMath, quote(std::string(s::kVtrnMathSleef)));
    const std::string sgemm =
        op.sgemm ? ", " + attr(s::kVtrnMath, quote(std::string(s::kVtrnMathSgemm))) : "";
    switch (op.kind) {
      case OpKind::kCompare: {
        std::string a =
            attr(s::kComparisonDirection, "#stablehlo<comparison_direction " +
                                              std::string(comparison_name(op.comparison)) + ">");
        if (op.compare_type != CompareType::kNone)
          a += ", " +
               attr(s::kCompareType, "#stablehlo<comparison_type " +
                                         std::string(compare_type_name(op.compare_type)) + ">");
        return a;
      }
      case OpKind::kConstant:
        return attr(s::kValue, print_dense(op.literal) + " : " + op.literal.type.str());
      case OpKind::kIota:
        return attr(s::kIotaDimension, std::to_string(op.dimension) + " : i64");
      case OpKind::kBroadcastInDim:
        return attr(s::kBroadcastDimensions, array_attr(op.dims));
      case OpKind::kTranspose:
        return attr(s::kPermutation, array_attr(op.dims));
      case OpKind::kSlice:
        return attr(s::kStartIndices, array_attr(op.start_indices)) + ", " +
               attr(s::kLimitIndices, array_attr(op.limit_indices)) + ", " +
               attr(s::kStrides, array_attr(op.strides));
      case OpKind::kDynamicSlice:
        return attr(s::kSliceSizes, array_attr(op.dims));
      case OpKind::kConcatenate:
        return attr(s::kDimension, std::to_string(op.dimension) + " : i64");
      case OpKind::kPad:
        return attr(s::kEdgePaddingLow, array_attr(op.edge_padding_low)) + ", " +
               attr(s::kEdgePaddingHigh, array_attr(op.edge_padding_high)) + ", " +
               attr(s::kInteriorPadding, array_attr(op.interior_padding));
      case OpKind::kReverse:
        return attr(s::kDimensions, array_attr(op.dims));
      case OpKind::kReduce:
        return attr(s::kDimensions, array_attr(op.dims)) +
               (op.cascade_sum
                    ? ", " + attr(s::kVtrnMath, quote(std::string(s::kVtrnMathCascadeSum)))
                : op.vec_sum ? ", " + attr(s::kVtrnMath, quote(std::string(s::kVtrnMathVecSum)))
                             : "");
      case OpKind::kDotGeneral: {
        std::string fields;
        auto field = [&](std::string_view n, const std::vector<std::int64_t>& v) {
          if (v.empty()) return;
          if (!fields.empty()) fields += ", ";
          fields += attr(n, list(v));
        };
        field(s::kLhsBatchingDimensions, op.dot.lhs_batch);
        field(s::kRhsBatchingDimensions, op.dot.rhs_batch);
        field(s::kLhsContractingDimensions, op.dot.lhs_contracting);
        field(s::kRhsContractingDimensions, op.dot.rhs_contracting);
        return attr(s::kDotDimensionNumbers, "#stablehlo.dot<" + fields + ">") + sgemm;
      }
      case OpKind::kConvolution: {
        const ConvAttrs& c = op.conv;
        const std::size_t n = c.padding_low.size();
        std::string pad = "dense<";
        if (n > 0) {
          pad += '[';
          for (std::size_t k = 0; k < n; ++k)
            pad += (k ? ", [" : "[") + std::to_string(c.padding_low[k]) + ", " +
                   std::to_string(c.padding_high[k]) + "]";
          pad += ']';
        }
        pad += "> : tensor<" + std::to_string(n) + "x2xi64>";
        return attr(s::kBatchGroupCount, std::to_string(c.batch_group_count) + " : i64") + ", " +
               attr(s::kConvDimensionNumbers, "#" + std::string(s::kConvDimensionNumbersAttr) +
                                                  "<" + conv_dimension_numbers_text(c.dims) + ">") +
               ", " +
               attr(s::kFeatureGroupCount, std::to_string(c.feature_group_count) + " : i64") +
               ", " + attr(s::kLhsDilation, array_attr(c.lhs_dilation)) + ", " +
               attr(s::kPadding, pad) + ", " + attr(s::kRhsDilation, array_attr(c.rhs_dilation)) +
               ", " + attr(s::kWindowStrides, array_attr(c.window_strides));
      }
      case OpKind::kGather: {
        const GatherDims& g = op.gather;
        return attr(s::kGatherDimensionNumbers,
                    "#stablehlo.gather<" + attr(s::kOffsetDims, list(g.offset_dims)) + ", " +
                        attr(s::kCollapsedSliceDims, list(g.collapsed_slice_dims)) + ", " +
                        attr(s::kStartIndexMap, list(g.start_index_map)) + ", " +
                        attr(s::kIndexVectorDim, std::to_string(g.index_vector_dim)) + ">") +
               ", " + attr(s::kIndicesAreSorted, boolean(op.indices_are_sorted)) + ", " +
               attr(s::kSliceSizes, array_attr(op.dims));
      }
      case OpKind::kScatter: {
        const ScatterDims& d = op.scatter;
        return attr(s::kIndicesAreSorted, boolean(op.indices_are_sorted)) + ", " +
               attr(s::kScatterDimensionNumbers,
                    "#stablehlo.scatter<" + attr(s::kUpdateWindowDims, list(d.update_window_dims)) +
                        ", " + attr(s::kInsertedWindowDims, list(d.inserted_window_dims)) + ", " +
                        attr(s::kScatterDimsToOperandDims, list(d.scatter_dims_to_operand_dims)) +
                        ", " + attr(s::kIndexVectorDim, std::to_string(d.index_vector_dim)) + ">") +
               ", " + attr(s::kUniqueIndices, boolean(op.unique_indices));
      }
      case OpKind::kSort:
        return attr(s::kDimension, std::to_string(op.dimension) + " : i64") + ", " +
               attr(s::kIsStable, boolean(op.is_stable));
      case OpKind::kRngBitGenerator:
        return attr(s::kRngAlgorithm, "#stablehlo<rng_algorithm " +
                                          std::string(rng_algorithm_name(op.rng_algorithm)) + ">");
      case OpKind::kCustomCall:
        return attr(s::kBackendConfig, quote(op.backend_config)) + ", " +
               attr(s::kCallTargetName, quote(op.call_target_name));
      default:
        return "";
    }
  }

  std::string out_;
  std::map<const Block*, Names> scopes_;
  int next_arg_ = 0;
  int next_value_ = 0;
};

}  // namespace

std::string print_dense(const Literal& lit) {
  const std::int64_t n = lit.type.num_elements();
  if (lit.splat || (n == 1 && lit.type.rank() == 0)) return "dense<" + element(lit, 0) + ">";
  if (n == 0) return "dense<>";
  if (n == 1 || n > 64) {
    if (n == 1) {
      // A rank>0 single element: nested brackets keep the shape explicit.
      std::string s;
      std::int64_t idx = 0;
      nested(lit, 0, idx, s);
      return "dense<" + s + ">";
    }
    std::string s = "dense<\"0x";
    static const char* kHex = "0123456789ABCDEF";
    for (std::uint8_t byte : lit.data) {
      s += kHex[byte >> 4];
      s += kHex[byte & 15];
    }
    return s + "\">";
  }
  std::string s;
  std::int64_t idx = 0;
  nested(lit, 0, idx, s);
  return "dense<" + s + ">";
}

std::string print_module(const Module& module) { return Printer().run(module); }

}  // namespace vtrn::hlo
