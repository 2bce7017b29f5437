// stablehlo.convolution: its shape rules and the text of its dimension numbers.
//
// The result of a convolution (StableHLO specification, "convolution"): with F feature groups
// and B batch groups (at most one of them above 1), the input has N*... batch and C = F*Ci
// features, the kernel Ci input features and O = F*Og (or B*Og) output features. Result
// feature o of group g reads input features [g*Ci, (g+1)*Ci) (feature groups) or input batch
// rows [g*N/B, (g+1)*N/B) (batch groups); the result batch is N/B. Each spatial dim of the
// result is conv_output_size() of the input's, the window's and the attributes.
#pragma once

#include <string>
#include <string_view>

#include "vtrn/hlo/ir.h"

namespace vtrn::hlo {

/// The size of one spatial dim of a convolution's result (the StableHLO shape rule): the input
/// of size |in| dilated by |lhs_dilation| and padded, the window of size |window| dilated by
/// |rhs_dilation|, moved by |stride|. 0 when the window does not fit; -1 when the padded input
/// has a negative size.
std::int64_t conv_output_size(std::int64_t in, std::int64_t window, std::int64_t stride,
                              std::int64_t padding_low, std::int64_t padding_high,
                              std::int64_t lhs_dilation, std::int64_t rhs_dilation);

/// "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]": per operand, the role of each of its dims in
/// order (b/f batch and feature, i/o kernel input and output feature, digits the spatial dims
/// in window order), as `#stablehlo.conv<...>` and the pretty `dim_numbers =` spell it.
std::string conv_dimension_numbers_text(const ConvDimensionNumbers& dims);

/// Parses the text conv_dimension_numbers_text() writes, or the
/// `raw input_batch_dimension = 0, input_feature_dimension = 1, input_spatial_dimensions = [...],
/// ...` form. Checks only the syntax (every role once per operand); the verifier checks the
/// rest. Throws hlo::Error naming what is wrong.
ConvDimensionNumbers parse_conv_dimension_numbers(std::string_view text);

/// The result type of stablehlo.convolution of |lhs| (input) and |rhs| (kernel) with |attrs|;
/// the element type is |lhs|'s. Throws hlo::Error (without the op's name) naming the attribute
/// or operand that breaks a rule.
TensorType infer_convolution_type(const ConvAttrs& attrs, const TensorType& lhs,
                                  const TensorType& rhs);

}  // namespace vtrn::hlo
