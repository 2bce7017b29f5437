#include "vtrn/hlo/convolution.h"

#include <cctype>
#include <limits>
#include <set>

namespace vtrn::hlo {
namespace {

std::string list_str(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// One operand's dims as roles: the two named dims (e.g. 'b' and 'f') and the spatial dims.
std::string operand_text(int rank, std::int64_t first, char first_name, std::int64_t second,
                         char second_name, const std::vector<std::int64_t>& spatial) {
  std::vector<std::string> roles(static_cast<std::size_t>(rank), "?");
  auto put = [&](std::int64_t d, std::string role) {
    if (d >= 0 && d < rank) roles[static_cast<std::size_t>(d)] = std::move(role);
  };
  put(first, std::string(1, first_name));
  put(second, std::string(1, second_name));
  for (std::size_t k = 0; k < spatial.size(); ++k) put(spatial[k], std::to_string(k));
  std::string s = "[";
  for (std::size_t i = 0; i < roles.size(); ++i) s += (i ? ", " : "") + roles[i];
  return s + "]";
}

// Reads "[r, r, ...]" roles of one operand: |first|/|second| get the dims named
// |first_name|/|second_name|, |spatial| the dims named by digits, in digit order.
void read_operand(std::string_view& t, const char* what, char first_name, char second_name,
                  std::int64_t* first, std::int64_t* second, std::vector<std::int64_t>* spatial) {
  auto skip_ws = [&] {
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  };
  skip_ws();
  if (t.empty() || t.front() != '[')
    throw Error(std::string("convolution dimension numbers: expected '[' to open the ") + what +
                " dims");
  t.remove_prefix(1);
  *first = *second = -1;
  std::vector<std::int64_t> by_window;  // dim of each spatial index
  std::int64_t dim = 0;
  for (;; ++dim) {
    skip_ws();
    if (!t.empty() && t.front() == ']' && dim == 0) break;
    if (t.empty()) throw Error("convolution dimension numbers: unexpected end of text");
    if (std::isdigit(static_cast<unsigned char>(t.front()))) {
      std::int64_t k = 0;
      while (!t.empty() && std::isdigit(static_cast<unsigned char>(t.front()))) {
        k = k * 10 + (t.front() - '0');
        if (k > 1024) throw Error("convolution dimension numbers: spatial index too large");
        t.remove_prefix(1);
      }
      if (static_cast<std::int64_t>(by_window.size()) <= k)
        by_window.resize(static_cast<std::size_t>(k + 1), -1);
      if (by_window[static_cast<std::size_t>(k)] >= 0)
        throw Error(std::string("convolution dimension numbers: spatial dim ") + std::to_string(k) +
                    " appears twice in the " + what + " dims");
      by_window[static_cast<std::size_t>(k)] = dim;
    } else if (t.front() == first_name || t.front() == second_name) {
      std::int64_t* slot = t.front() == first_name ? first : second;
      if (*slot >= 0)
        throw Error(std::string("convolution dimension numbers: '") + t.front() +
                    "' appears twice in the " + what + " dims");
      *slot = dim;
      t.remove_prefix(1);
    } else {
      throw Error(std::string("convolution dimension numbers: unexpected '") + t.front() +
                  "' in the " + what + " dims (expected " + first_name + ", " + second_name +
                  " or a spatial index)");
    }
    skip_ws();
    if (!t.empty() && t.front() == ',') {
      t.remove_prefix(1);
      continue;
    }
    if (!t.empty() && t.front() == ']') break;
    throw Error(std::string("convolution dimension numbers: expected ',' or ']' in the ") + what +
                " dims");
  }
  t.remove_prefix(1);
  if (*first < 0 || *second < 0)
    throw Error(std::string("convolution dimension numbers: the ") + what + " dims must name '" +
                first_name + "' and '" + second_name + "'");
  for (std::size_t k = 0; k < by_window.size(); ++k)
    if (by_window[k] < 0)
      throw Error("convolution dimension numbers: spatial dim " + std::to_string(k) +
                  " is missing from the " + what + " dims");
  *spatial = by_window;
}

void expect_text(std::string_view& t, std::string_view word) {
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  if (t.substr(0, word.size()) != word)
    throw Error("convolution dimension numbers: expected '" + std::string(word) + "'");
  t.remove_prefix(word.size());
}

// The `raw key = value, ...` form.
ConvDimensionNumbers parse_raw(std::string_view t) {
  ConvDimensionNumbers d;
  std::set<std::string> seen;
  auto skip_ws = [&] {
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  };
  auto integer = [&]() -> std::int64_t {
    skip_ws();
    std::int64_t v = 0;
    if (t.empty() || !std::isdigit(static_cast<unsigned char>(t.front())))
      throw Error("convolution dimension numbers: expected an integer");
    while (!t.empty() && std::isdigit(static_cast<unsigned char>(t.front()))) {
      v = v * 10 + (t.front() - '0');
      if (v > 1024) throw Error("convolution dimension numbers: dimension too large");
      t.remove_prefix(1);
    }
    return v;
  };
  while (true) {
    skip_ws();
    if (t.empty()) break;
    std::string key;
    while (!t.empty() &&
           (std::isalnum(static_cast<unsigned char>(t.front())) || t.front() == '_')) {
      key += t.front();
      t.remove_prefix(1);
    }
    expect_text(t, "=");
    std::int64_t* scalar = key == "input_batch_dimension"             ? &d.input_batch
                           : key == "input_feature_dimension"         ? &d.input_feature
                           : key == "kernel_input_feature_dimension"  ? &d.kernel_input_feature
                           : key == "kernel_output_feature_dimension" ? &d.kernel_output_feature
                           : key == "output_batch_dimension"          ? &d.output_batch
                           : key == "output_feature_dimension"        ? &d.output_feature
                                                                      : nullptr;
    std::vector<std::int64_t>* list = key == "input_spatial_dimensions"    ? &d.input_spatial
                                      : key == "kernel_spatial_dimensions" ? &d.kernel_spatial
                                      : key == "output_spatial_dimensions" ? &d.output_spatial
                                                                           : nullptr;
    if (!scalar && !list) throw Error("convolution dimension numbers: unknown field '" + key + "'");
    if (!seen.insert(key).second)
      throw Error("convolution dimension numbers: field '" + key + "' is given twice");
    if (scalar) {
      *scalar = integer();
    } else {
      expect_text(t, "[");
      skip_ws();
      if (!t.empty() && t.front() == ']') {
        t.remove_prefix(1);
      } else {
        do {
          list->push_back(integer());
          skip_ws();
          if (t.empty()) throw Error("convolution dimension numbers: unexpected end of text");
          const char c = t.front();
          t.remove_prefix(1);
          if (c == ']') break;
          if (c != ',') throw Error("convolution dimension numbers: expected ',' or ']'");
        } while (true);
      }
    }
    skip_ws();
    if (!t.empty() && t.front() == ',') t.remove_prefix(1);
  }
  if (seen.size() != 9)
    throw Error("convolution dimension numbers: the raw form needs all nine fields, got " +
                std::to_string(seen.size()));
  return d;
}

void check_permutation(const char* operand, int rank, std::int64_t a, std::int64_t b,
                       const std::vector<std::int64_t>& spatial) {
  std::vector<std::int64_t> all = spatial;
  all.push_back(a);
  all.push_back(b);
  std::set<std::int64_t> seen;
  bool ok = static_cast<int>(all.size()) == rank;
  for (std::int64_t d : all) ok = ok && d >= 0 && d < rank && seen.insert(d).second;
  if (!ok)
    throw Error(std::string("dimension_numbers: the ") + operand + " dims must name each of its " +
                std::to_string(rank) + " dims once, got batch/feature " + std::to_string(a) + ", " +
                std::to_string(b) + " and spatial " + list_str(spatial));
}

}  // namespace

ConvDimensionNumbers ConvDimensionNumbers::channels_first(int spatial) {
  ConvDimensionNumbers d;
  for (int k = 0; k < spatial; ++k) {
    d.input_spatial.push_back(2 + k);
    d.kernel_spatial.push_back(2 + k);
    d.output_spatial.push_back(2 + k);
  }
  return d;
}

std::int64_t conv_output_size(std::int64_t in, std::int64_t window, std::int64_t stride,
                              std::int64_t padding_low, std::int64_t padding_high,
                              std::int64_t lhs_dilation, std::int64_t rhs_dilation) {
  const std::int64_t dilated_in = in == 0 ? 0 : (in - 1) * lhs_dilation + 1;
  const std::int64_t padded = padding_low + dilated_in + padding_high;
  if (padded < 0) return -1;
  const std::int64_t dilated_window = window == 0 ? 0 : (window - 1) * rhs_dilation + 1;
  if (padded == 0 || dilated_window > padded) return 0;
  return (padded - dilated_window) / stride + 1;
}

std::string conv_dimension_numbers_text(const ConvDimensionNumbers& d) {
  const int rank = static_cast<int>(d.input_spatial.size()) + 2;
  return operand_text(rank, d.input_batch, 'b', d.input_feature, 'f', d.input_spatial) + "x" +
         operand_text(rank, d.kernel_input_feature, 'i', d.kernel_output_feature, 'o',
                      d.kernel_spatial) +
         "->" + operand_text(rank, d.output_batch, 'b', d.output_feature, 'f', d.output_spatial);
}

ConvDimensionNumbers parse_conv_dimension_numbers(std::string_view t) {
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  if (t.substr(0, 3) == "raw") return parse_raw(t.substr(3));
  ConvDimensionNumbers d;
  read_operand(t, "input", 'b', 'f', &d.input_batch, &d.input_feature, &d.input_spatial);
  expect_text(t, "x");
  read_operand(t, "kernel", 'i', 'o', &d.kernel_input_feature, &d.kernel_output_feature,
               &d.kernel_spatial);
  expect_text(t, "->");
  read_operand(t, "output", 'b', 'f', &d.output_batch, &d.output_feature, &d.output_spatial);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  if (!t.empty())
    throw Error("convolution dimension numbers: unexpected text after the output dims: '" +
                std::string(t.substr(0, 20)) + "'");
  return d;
}

TensorType infer_convolution_type(const ConvAttrs& a, const TensorType& lhs,
                                  const TensorType& rhs) {
  const int rank = lhs.rank();
  if (rank < 2 || rhs.rank() != rank)
    throw Error("operands " + lhs.str() + " and " + rhs.str() +
                " must have the same rank, at least 2");
  if (lhs.dtype != rhs.dtype)
    throw Error("operand 1 (kernel) has type " + rhs.str() +
                ", expected the element type of operand 0 (" + lhs.str() + ")");
  if (!is_float(lhs.dtype))
    throw Error("operands have type " + lhs.str() +
                ", expected floating-point elements (vtrn computes convolutions of floats)");
  const std::size_t spatial = static_cast<std::size_t>(rank - 2);
  const ConvDimensionNumbers& d = a.dims;
  check_permutation("input", rank, d.input_batch, d.input_feature, d.input_spatial);
  check_permutation("kernel", rank, d.kernel_input_feature, d.kernel_output_feature,
                    d.kernel_spatial);
  check_permutation("output", rank, d.output_batch, d.output_feature, d.output_spatial);
  struct Field {
    const char* name;
    const std::vector<std::int64_t>* v;
    std::int64_t min;
  };
  for (const Field& f :
       {Field{"window_strides", &a.window_strides, 1},
        Field{"padding (low)", &a.padding_low, std::numeric_limits<std::int64_t>::min()},
        Field{"padding (high)", &a.padding_high, std::numeric_limits<std::int64_t>::min()},
        Field{"lhs_dilation", &a.lhs_dilation, 1}, Field{"rhs_dilation", &a.rhs_dilation, 1}}) {
    if (f.v->size() != spatial)
      throw Error(std::string(f.name) + " " + list_str(*f.v) + " has " +
                  std::to_string(f.v->size()) + " entries, expected one per spatial dim (" +
                  std::to_string(spatial) + ")");
    for (std::int64_t x : *f.v)
      if (x < f.min) throw Error(std::string(f.name) + " " + list_str(*f.v) + " must be positive");
  }
  const std::int64_t fgc = a.feature_group_count, bgc = a.batch_group_count;
  if (fgc < 1 || bgc < 1)
    throw Error("feature_group_count " + std::to_string(fgc) + " and batch_group_count " +
                std::to_string(bgc) + " must be positive");
  if (fgc > 1 && bgc > 1)
    throw Error("feature_group_count " + std::to_string(fgc) + " and batch_group_count " +
                std::to_string(bgc) + " cannot both be above 1");
  const std::int64_t batch = lhs.dims[static_cast<std::size_t>(d.input_batch)];
  const std::int64_t features = lhs.dims[static_cast<std::size_t>(d.input_feature)];
  const std::int64_t kin = rhs.dims[static_cast<std::size_t>(d.kernel_input_feature)];
  const std::int64_t kout = rhs.dims[static_cast<std::size_t>(d.kernel_output_feature)];
  if (batch % bgc != 0)
    throw Error("the input batch size " + std::to_string(batch) +
                " is not a multiple of batch_group_count " + std::to_string(bgc));
  if (features % fgc != 0)
    throw Error("the input feature size " + std::to_string(features) +
                " is not a multiple of feature_group_count " + std::to_string(fgc));
  if (features / fgc != kin)
    throw Error("the kernel input feature size " + std::to_string(kin) +
                " must be the input feature size " + std::to_string(features) +
                " divided by feature_group_count " + std::to_string(fgc));
  if (kout % bgc != 0 || kout % fgc != 0)
    throw Error("the kernel output feature size " + std::to_string(kout) +
                " is not a multiple of the group count " + std::to_string(fgc * bgc));
  TensorType out(lhs.dtype, std::vector<std::int64_t>(static_cast<std::size_t>(rank), 0));
  out.dims[static_cast<std::size_t>(d.output_batch)] = batch / bgc;
  out.dims[static_cast<std::size_t>(d.output_feature)] = kout;
  for (std::size_t k = 0; k < spatial; ++k) {
    const std::int64_t size = conv_output_size(
        lhs.dims[static_cast<std::size_t>(d.input_spatial[k])],
        rhs.dims[static_cast<std::size_t>(d.kernel_spatial[k])], a.window_strides[k],
        a.padding_low[k], a.padding_high[k], a.lhs_dilation[k], a.rhs_dilation[k]);
    if (size < 0)
      throw Error("spatial dim " + std::to_string(k) + ": padding [" +
                  std::to_string(a.padding_low[k]) + ", " + std::to_string(a.padding_high[k]) +
                  "] crops more than the dilated input of size " +
                  std::to_string(lhs.dims[static_cast<std::size_t>(d.input_spatial[k])]));
    out.dims[static_cast<std::size_t>(d.output_spatial[k])] = size;
  }
  return out;
}

}  // namespace vtrn::hlo
