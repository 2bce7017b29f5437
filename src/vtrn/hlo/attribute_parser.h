// Attributes and types of StableHLO MLIR text, for the parser (parser.h): attribute
// dictionaries and values (integers, floats, strings, lists, `array<i64: ...>`, enums such as
// `#stablehlo<comparison_direction LT>`, structs such as `#stablehlo.dot<...>`, dense literals),
// tensor types, and the conversion of a dense literal's text into a Literal. Attributes vtrn
// does not use (locations, shardings, aliases) parse to kOther and are dropped.
// Internal to the hlo parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vtrn/hlo/ir.h"
#include "vtrn/hlo/text_lexer.h"

namespace vtrn::hlo {

/// The text of a `dense<...>` literal, before its type is known.
struct DenseBody {
  bool hex = false;        ///< dense<"0x...">
  std::string hex_digits;  ///< without the "0x"
  std::vector<std::string> elems;
  bool bracketed = false;  ///< written as [..], so a single element is not a splat
  std::size_t pos = 0;     ///< where the body starts, for errors
};

/// One parsed attribute value.
struct Attr {
  enum Kind {
    kNone,
    kInt,
    kFloat,
    kString,
    kBool,
    kList,
    kEnum,
    kStruct,
    kDict,
    kDense,
    kConvDims,  ///< #stablehlo.conv<...>: the text between the angle brackets, in s
    kOther
  } kind = kNone;
  std::int64_t i = 0;
  double f = 0;
  std::string s;  ///< kString, kEnum: the value; kStruct: the struct's name
  std::vector<Attr> items;
  // Struct fields and dictionary entries (two vectors: a vector of pair<string, Attr> would need
  // Attr to be complete here).
  std::vector<std::string> field_names;
  std::vector<Attr> field_values;
  std::shared_ptr<DenseBody> dense;
  std::optional<TensorType> dense_type;
  std::vector<TensorType> fn_results;  ///< function_type attributes

  const Attr* field(std::string_view name) const {
    for (std::size_t i = 0; i < field_names.size(); ++i)
      if (field_names[i] == name) return &field_values[i];
    return nullptr;
  }
  static Attr integer(std::int64_t v) {
    Attr a;
    a.kind = kInt;
    a.i = v;
    return a;
  }
};

using AttrDict = std::vector<std::pair<std::string, Attr>>;

/// A function argument's buffer donation from its attributes: result N for
/// `tf.aliasing_output = N`, Block::kAnyResult for `jax.buffer_donor = true`, else
/// Block::kNotDonated.
int arg_donation(const AttrDict& attrs);
/// Per argument, from a generic function's `arg_attrs = [{...}, ...]`; empty when none is
/// donated.
std::vector<int> arg_donations(const Attr& arg_attrs);
/// Records the donation of |block|'s last argument (the list stays empty while none is).
void set_last_arg_donation(Block& block, int donation);

class AttributeParser : public TextLexer {
 public:
  using TextLexer::TextLexer;

  /// `#loc1 = loc(...)` and other attribute aliases at the top level, and Shardy meshes
  /// (skip_sdy_mesh).
  void skip_aliases();

  /// tensor<2x3xf32>, or a bare element type (f32) as a rank-0 tensor.
  TensorType tensor_type();
  /// (T, T, ...), each type optionally followed by its attribute dictionary.
  std::vector<TensorType> type_list_in_parens();

  /// {key = value, key, ...} (a bare key is a unit attribute: kBool true).
  AttrDict parse_dict();
  Attr parse_attr();
  /// Skips Shardy's `sdy.mesh @m = <["x"=1]> {...}` (or its generic form) at module level, a
  /// device mesh a single-device program does not need; returns whether there was one.
  bool skip_sdy_mesh();

  /// The integers of a list, a single integer or an integer dense literal (a splat is
  /// repeated to its type's size). Errors name |what| at |pos|.
  std::vector<std::int64_t> ints_of(const Attr& a, const std::string& what, std::size_t pos) const;
  /// The Literal |body| spells as |type|.
  Literal make_literal(const DenseBody& body, const TensorType& type) const;

 private:
  /// After a number: is there `: i64` (a typed integer) rather than the op's `: tensor<...>`?
  /// Consumes it when there is.
  bool scalar_type_word_ahead();
  Attr number_attr();
  /// The body of `dense<...>`, after the '<'.
  std::shared_ptr<DenseBody> dense_body();
  void dense_elems(DenseBody& body, int depth);
  void store_elem(const std::string& e, DType d, std::uint8_t* dst, std::size_t pos) const;
};

}  // namespace vtrn::hlo
