// The spellings of StableHLO MLIR text that the printer writes and the parser reads: the op
// prefix and the attribute names, one table for both (op names are in ir.h's VTRN_HLO_OPS, and
// the spellings of enum attributes next to their enums there).
#pragma once

#include <string_view>

namespace vtrn::hlo::syntax {

/// Every op name is "stablehlo." + op_name(kind) but math.fma's (qualified_op_name in ir.h).
inline constexpr std::string_view kOpPrefix = "stablehlo.";

// Attribute names, by the op that carries them.
inline constexpr std::string_view kVtrnMath = "vtrn.math";   // unary math (Op::vml)
inline constexpr std::string_view kVtrnMathVml = "vml";      // its value on unary math
inline constexpr std::string_view kVtrnMathSleef = "sleef";  // or this one on exponential
inline constexpr std::string_view kVtrnMathSgemm = "sgemm";  // its value on dot_general
inline constexpr std::string_view kVtrnMathCascadeSum = "cascade_sum";  // its value on reduce
inline constexpr std::string_view kVtrnMathVecSum = "vec_sum";          // or this one on reduce
inline constexpr std::string_view kComparisonDirection = "comparison_direction";  // compare
inline constexpr std::string_view kCompareType = "compare_type";                  // compare
inline constexpr std::string_view kValue = "value";                               // constant
inline constexpr std::string_view kIotaDimension = "iota_dimension";              // iota
inline constexpr std::string_view kBroadcastDimensions = "broadcast_dimensions";  // broadcast
inline constexpr std::string_view kPermutation = "permutation";                   // transpose
inline constexpr std::string_view kStartIndices = "start_indices";                // slice
inline constexpr std::string_view kLimitIndices = "limit_indices";                // slice
inline constexpr std::string_view kStrides = "strides";                           // slice
inline constexpr std::string_view kSliceSizes = "slice_sizes";             // dynamic_slice, gather
inline constexpr std::string_view kDimension = "dimension";                // concatenate, sort
inline constexpr std::string_view kDimensions = "dimensions";              // reduce, reverse
inline constexpr std::string_view kEdgePaddingLow = "edge_padding_low";    // pad
inline constexpr std::string_view kEdgePaddingHigh = "edge_padding_high";  // pad
inline constexpr std::string_view kInteriorPadding = "interior_padding";   // pad
inline constexpr std::string_view kIsStable = "is_stable";                 // sort
inline constexpr std::string_view kIndicesAreSorted = "indices_are_sorted";  // gather, scatter
inline constexpr std::string_view kUniqueIndices = "unique_indices";         // scatter
inline constexpr std::string_view kRngAlgorithm = "rng_algorithm";           // rng_bit_generator
inline constexpr std::string_view kCallTargetName = "call_target_name";      // custom_call
inline constexpr std::string_view kBackendConfig = "backend_config";         // custom_call

// dot_general: dot_dimension_numbers = #stablehlo.dot<...> and its fields.
inline constexpr std::string_view kDotDimensionNumbers = "dot_dimension_numbers";
inline constexpr std::string_view kLhsBatchingDimensions = "lhs_batching_dimensions";
inline constexpr std::string_view kRhsBatchingDimensions = "rhs_batching_dimensions";
inline constexpr std::string_view kLhsContractingDimensions = "lhs_contracting_dimensions";
inline constexpr std::string_view kRhsContractingDimensions = "rhs_contracting_dimensions";

// gather: dimension_numbers = #stablehlo.gather<...> and its fields.
inline constexpr std::string_view kGatherDimensionNumbers = "dimension_numbers";
inline constexpr std::string_view kOffsetDims = "offset_dims";
inline constexpr std::string_view kCollapsedSliceDims = "collapsed_slice_dims";
inline constexpr std::string_view kStartIndexMap = "start_index_map";
inline constexpr std::string_view kOperandBatchingDims = "operand_batching_dims";  // unsupported

// scatter: scatter_dimension_numbers = #stablehlo.scatter<...> and its fields.
inline constexpr std::string_view kScatterDimensionNumbers = "scatter_dimension_numbers";
inline constexpr std::string_view kUpdateWindowDims = "update_window_dims";
inline constexpr std::string_view kInsertedWindowDims = "inserted_window_dims";
inline constexpr std::string_view kScatterDimsToOperandDims = "scatter_dims_to_operand_dims";
inline constexpr std::string_view kInputBatchingDims = "input_batching_dims";  // unsupported

// gather and scatter.
inline constexpr std::string_view kIndexVectorDim = "index_vector_dim";

// convolution, generic form: dimension_numbers = #stablehlo.conv<...> and the window.
inline constexpr std::string_view kConvDimensionNumbers = "dimension_numbers";
inline constexpr std::string_view kConvDimensionNumbersAttr = "stablehlo.conv";  // #stablehlo.conv
inline constexpr std::string_view kWindowStrides = "window_strides";
inline constexpr std::string_view kPadding = "padding";  // dense<[[low, high], ...]>
inline constexpr std::string_view kLhsDilation = "lhs_dilation";
inline constexpr std::string_view kRhsDilation = "rhs_dilation";
inline constexpr std::string_view kWindowReversal = "window_reversal";  // only all false
inline constexpr std::string_view kFeatureGroupCount = "feature_group_count";
inline constexpr std::string_view kBatchGroupCount = "batch_group_count";
// convolution, pretty form: `dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride =
// [..], pad = [[..]], lhs_dilate = [..], rhs_dilate = [..], reverse = [..]}`.
inline constexpr std::string_view kPrettyDimNumbers = "dim_numbers";
inline constexpr std::string_view kPrettyWindow = "window";
inline constexpr std::string_view kPrettyStride = "stride";
inline constexpr std::string_view kPrettyPad = "pad";
inline constexpr std::string_view kPrettyLhsDilate = "lhs_dilate";
inline constexpr std::string_view kPrettyRhsDilate = "rhs_dilate";
inline constexpr std::string_view kPrettyReverse = "reverse";

}  // namespace vtrn::hlo::syntax
