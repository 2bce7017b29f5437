// One op as the parser read it (generic or pretty form), and its construction into a verified
// hlo::Op: attributes into the op's fields, the types after the colon checked against the
// operands and the inferred results. Internal to the hlo parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vtrn/hlo/attribute_parser.h"
#include "vtrn/hlo/ir.h"

namespace vtrn::hlo {

struct ParsedOp {
  std::string name;  ///< full name, e.g. "stablehlo.add"
  OpKind kind = OpKind::kAdd;
  bool is_dot = false;  ///< stablehlo.dot (mapped to dot_general)
  std::size_t pos = 0;  ///< where the op's name starts, for errors
  std::vector<int> operands;
  std::vector<std::string> operand_names;  ///< as spelled ("%3"), for errors
  AttrDict attrs;
  std::vector<std::string> positional;  ///< bare words of the pretty form (compare's LT, FLOAT)
  std::vector<std::shared_ptr<Block>> regions;
  std::optional<ReduceKind> applies;  ///< pretty reduce: `applies stablehlo.add`
  bool have_types = false;            ///< the op was followed by `: types`
  bool functional = false;            ///< ... in the form `: (operands) -> results`
  std::vector<TensorType> in_types, out_types;
  /// Pretty slice: `[start:limit:stride, ...]`.
  std::vector<std::int64_t> slice_start, slice_limit, slice_strides;
  bool has_slice_spec = false;

  const Attr* attr(std::string_view n) const {
    for (const auto& [k, v] : attrs)
      if (k == n) return &v;
    return nullptr;
  }
};

/// Builds |op| into |block| and returns its result values. Errors (missing or malformed
/// attributes, types that disagree, verifier errors) are raised through |text|, at op.pos.
std::vector<int> build_parsed_op(const ParsedOp& op, Block& block, const AttributeParser& text);

/// stablehlo.reduce_window (generic form), decomposed as it is parsed (reduce_window.cc): the
/// operands padded with their init values (and base dilation), a gather of every window's
/// elements into [outputs..., window...], and a stablehlo.reduce over the window dims with the
/// op's own region, so any reducer and operand count runs.
std::vector<int> decompose_reduce_window(const ParsedOp& op, Block& block,
                                         const AttributeParser& text);

}  // namespace vtrn::hlo
