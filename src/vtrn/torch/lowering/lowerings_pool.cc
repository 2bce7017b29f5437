// Pooling over 1-3 spatial dims: max_pool2d/3d_with_indices, avg_pool2d/3d, the adaptive
// forms (_adaptive_avg_pool2d/3d, adaptive_max_pool2d/3d) and each one's backward. The 1-d
// functions are PyTorch composites over the 2-d ops.
//
// The window geometry depends only on the static arguments, so it is computed here: for every
// output position p (of P) and window element k (of K, in the CPU kernel's scan order) the flat
// position of the input element in its [*spatial] plane, or none (padding, the tail of a
// shorter adaptive window). The input, viewed as [B, S] (B the leading dims, S the plane), is
// gathered into [B, P, K] once and reduced over K:
//  * max: the largest element; its index is the first position holding it in scan order, or the
//    last NaN when the window has one (the CPU kernel's `val > max || isnan(val)`);
//  * avg: the sum in the accumulate type, divided by the window's divisor (count_include_pad:
//    the window clipped to the padded input; otherwise to the input; or divisor_override), or
//    for adaptive windows by each dim's length in turn, as the CPU kernels divide.
// The backwards scatter-add the output gradient back in the same order as the CPU's loops (max:
// into the saved indices; avg: divided by the divisor, into every window element).
#include <algorithm>
#include <cmath>
#include <limits>

#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::ReduceKind;
using hlo::ScatterKind;
using Dims = std::vector<std::int64_t>;

/// The offset of a position outside the input: any sum containing it is negative.
constexpr double kOutside = -1099511627776.0;  // -(2^40)

/// One spatial dim's windows.
struct Axis {
  std::int64_t in = 0, out = 0, window = 0;
  std::vector<double> pos;      ///< [out * window]: input position, or kOutside
  std::vector<double> divisor;  ///< [out]: this dim's factor of the avg divisor
};

/// A call's windows: the leading dims, then one Axis per spatial dim.
struct Windows {
  Dims lead;
  std::vector<Axis> axes;
  std::int64_t batch() const {
    std::int64_t b = 1;
    for (std::int64_t d : lead) b *= d;
    return b;
  }
  std::int64_t plane() const {
    std::int64_t s = 1;
    for (const Axis& a : axes) s *= a.in;
    return s;
  }
  std::int64_t outputs() const {
    std::int64_t p = 1;
    for (const Axis& a : axes) p *= a.out;
    return p;
  }
  std::int64_t window() const {
    std::int64_t k = 1;
    for (const Axis& a : axes) k *= a.window;
    return k;
  }
  Dims out_shape() const {
    Dims s = lead;
    for (const Axis& a : axes) s.push_back(a.out);
    return s;
  }
};

/// Splits |shape| into leading dims and |n| spatial dims: the CPU takes [C, *S] or [N, C, *S]
/// with no empty spatial or channel dim (its checks report anything else).
Windows split(const Dims& shape, std::size_t n) {
  if (shape.size() != n + 1 && shape.size() != n + 2)
    throw Unsupported("pooling input of an unexpected rank");
  Windows w;
  w.lead.assign(shape.begin(), shape.end() - static_cast<std::ptrdiff_t>(n));
  // An empty batch is allowed (the result is empty too); any other empty dim is an error.
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 0 && !(i == 0 && shape.size() == n + 2))
      throw Unsupported("pooling of an empty input");
  w.axes.resize(n);
  for (std::size_t d = 0; d < n; ++d) w.axes[d].in = shape[w.lead.size() + d];
  return w;
}

/// |v| with one entry per spatial dim (a single value repeats; |fallback| when empty).
Dims per_dim(Dims v, std::size_t n, const Dims& fallback, const char* what) {
  if (v.empty()) v = fallback;
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) throw Unsupported(std::string("pooling ") + what + " of the wrong length");
  return v;
}

/// PyTorch's pooling_output_shape.
std::int64_t pooled_size(std::int64_t in, std::int64_t k, std::int64_t pad, std::int64_t stride,
                         std::int64_t dilation, bool ceil_mode) {
  const std::int64_t num = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  std::int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

/// The windows of max/avg pooling (avg: dilation 1). Arguments the CPU rejects (its checks
/// give the error) throw Unsupported.
Windows sliding(const Dims& shape, std::size_t n, Dims kernel, Dims stride, Dims padding,
                Dims dilation, bool ceil_mode, bool count_include_pad) {
  Windows w = split(shape, n);
  kernel = per_dim(kernel, n, {}, "kernel_size");
  stride = per_dim(stride, n, kernel, "stride");
  padding = per_dim(padding, n, {0}, "padding");
  dilation = per_dim(dilation, n, {1}, "dilation");
  for (std::size_t d = 0; d < n; ++d) {
    Axis& a = w.axes[d];
    const std::int64_t k = kernel[d], s = stride[d], p = padding[d], dl = dilation[d];
    if (k <= 0 || s <= 0 || dl <= 0 || p < 0 || p > k / 2)
      throw Unsupported("pooling arguments out of range (PyTorch's CPU kernel reports them)");
    a.out = pooled_size(a.in, k, p, s, dl, ceil_mode);
    if (a.out < 1) throw Unsupported("pooling output too small");
    a.window = k;
    for (std::int64_t o = 0; o < a.out; ++o) {
      const std::int64_t start = o * s - p;
      bool any = false;
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t i = start + j * dl;
        const bool inside = i >= 0 && i < a.in;
        any = any || inside;
        a.pos.push_back(inside ? static_cast<double>(i) : kOutside);
      }
      // A window with no input element: the CPU gives -inf and a position outside the
      // window for max pooling; leave such calls to it.
      if (!any && dl > 1) throw Unsupported("pooling window without an input element");
      const std::int64_t end_padded = std::min(start + k, a.in + p);
      a.divisor.push_back(static_cast<double>(
          count_include_pad ? end_padded - start
                            : std::max<std::int64_t>(0, std::min(end_padded, a.in) -
                                                            std::max<std::int64_t>(start, 0))));
    }
  }
  return w;
}

/// The windows of adaptive pooling to |size|: [floor(o * in / out), ceil((o + 1) * in / out)).
Windows adaptive(const Dims& shape, std::size_t n, Dims size) {
  Windows w = split(shape, n);
  size = per_dim(size, n, {}, "output_size");
  for (std::size_t d = 0; d < n; ++d) {
    Axis& a = w.axes[d];
    a.out = size[d];
    if (a.out < 1) throw Unsupported("adaptive pooling output size < 1");
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    for (std::int64_t o = 0; o < a.out; ++o) {
      const std::int64_t start = (o / a.out) * a.in + ((o % a.out) * a.in) / a.out;
      const std::int64_t end = 1 + ((o + 1) * a.in - 1) / a.out;
      ranges.emplace_back(start, end);
      a.window = std::max(a.window, end - start);
    }
    for (auto [start, end] : ranges) {
      for (std::int64_t j = 0; j < a.window; ++j)
        a.pos.push_back(start + j < end ? static_cast<double>(start + j) : kOutside);
      a.divisor.push_back(static_cast<double>(end - start));
    }
  }
  return w;
}

/// [P, K] i64: the flat plane position of every window element, negative outside the input.
Value positions(Lowerer& L, const Windows& w) {
  const std::size_t n = w.axes.size();
  Dims full;
  for (const Axis& a : w.axes) full.push_back(a.out);
  for (const Axis& a : w.axes) full.push_back(a.window);
  Value flat;
  std::int64_t stride = 1;
  for (std::size_t d = n; d-- > 0;) {
    const Axis& a = w.axes[d];
    std::vector<double> scaled(a.pos);
    for (double& v : scaled) v *= static_cast<double>(stride);
    Value t = L.b.constant(
        hlo::Literal::from_doubles(TensorType(DType::kI64, {a.out, a.window}), scaled));
    t = L.b.broadcast_in_dim(t, full,
                             {static_cast<std::int64_t>(d), static_cast<std::int64_t>(n + d)});
    flat = flat.id < 0 ? t : L.b.add(flat, t);
    stride *= a.in;
  }
  return L.b.reshape(flat, {w.outputs(), w.window()});
}

Value is_inside(Lowerer& L, Value pos) {
  return L.b.compare(Comparison::kGE, pos, L.full_like(pos, 0));
}

/// The windows of |x| (any shape with w's plane last) as [B, P, K], and the positions [P, K].
struct Gathered {
  Value values, pos, inside;
};
Gathered gather_windows(Lowerer& L, Value x, const Windows& w) {
  const std::int64_t b = w.batch(), p = w.outputs(), k = w.window();
  Value pos = positions(L, w);
  Value inside = is_inside(L, pos);
  Value idx = L.b.select(inside, pos, L.full_like(pos, 0));
  hlo::GatherDims g;
  g.offset_dims = {0};
  g.collapsed_slice_dims = {1};
  g.start_index_map = {1};
  g.index_vector_dim = 1;
  Value flat = L.b.reshape(x, {b, w.plane()});
  Value v = L.b.gather(flat, L.b.reshape(idx, {p * k, 1}), g, {b, 1});
  return {L.b.reshape(v, {b, p, k}), pos, inside};
}

/// Max over each window: values and int64 plane indices, both [B, P].
std::pair<Value, Value> window_max(Lowerer& L, const Gathered& gw) {
  const Dims s = L.shape(gw.values);
  const DType d = L.dtype(gw.values);
  Value inside = L.b.broadcast_in_dim(gw.inside, s, {1, 2});
  Value pos = L.b.broadcast_in_dim(gw.pos, s, {1, 2});
  const double lowest = hlo::is_float(d)  ? -INFINITY
                        : d == DType::kU8 ? 0.0
                                          : -std::pow(2.0, 8 * hlo::dtype_size(d) - 1);
  Value v = L.b.select(inside, gw.values, L.b.broadcast_to(L.constant(lowest, d), s));
  Value m = L.reduce(v, {2}, ReduceKind::kMax, false);
  Value target = L.b.binary(hlo::OpKind::kAnd, inside,
                            L.b.compare(Comparison::kEQ, v, L.b.broadcast_in_dim(m, s, {0, 1})));
  const double none = std::numeric_limits<std::int32_t>::max() * 1024.0;
  Value idx =
      L.reduce(L.b.select(target, pos, L.full_like(pos, none)), {2}, ReduceKind::kMin, false);
  if (hlo::is_float(d)) {
    Value nan = L.b.binary(hlo::OpKind::kAnd, inside, L.b.compare(Comparison::kNE, v, v));
    Value any_nan = L.reduce(nan, {2}, ReduceKind::kOr, false);
    Value last_nan =
        L.reduce(L.b.select(nan, pos, L.full_like(pos, -1)), {2}, ReduceKind::kMax, false);
    idx = L.b.select(any_nan, last_nan, idx);
    m = L.b.select(any_nan, L.full_like(m, NAN), m);
  }
  return {m, idx};
}

/// Scatter-adds |rows| [R, W] into a [n, W] zero tensor at |index| [R] (dropping negative
/// or too large positions), in row order.
Value scatter_rows(Lowerer& L, Value rows, Value index, std::int64_t n) {
  const Dims s = L.shape(rows);
  hlo::ScatterDims sd;
  sd.update_window_dims = {1};
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = 1;
  Value zeros = L.b.broadcast_to(L.constant(0, L.dtype(rows)), {n, s[1]});
  return L.b.scatter(zeros, L.b.reshape(index, {s[0], 1}), rows, sd, ScatterKind::kAdd);
}

/// A zero tensor of |shape| (the result of an empty batch).
Value zeros(Lowerer& L, const Dims& shape, DType d) {
  return L.b.broadcast_to(L.constant(0, d), shape);
}

/// The values and indices of max pooling |x| over |w|.
std::vector<Value> max_outputs(Lowerer& L, Value x, const Windows& w) {
  const DType d = L.dtype(x);
  if (w.batch() == 0)
    return {L.convert(zeros(L, w.out_shape(), d), L.out_dtype(0, d)),
            L.convert(zeros(L, w.out_shape(), DType::kI64), L.out_dtype(1, DType::kI64))};
  auto [m, idx] = window_max(L, gather_windows(L, x, w));
  return {L.convert(L.b.reshape(m, w.out_shape()), L.out_dtype(0, d)),
          L.convert(L.b.reshape(idx, w.out_shape()), L.out_dtype(1, DType::kI64))};
}

std::size_t spatial_dims(const Lowerer& L) {
  const std::string& name = L.entry.name;
  return name.find("3d") != std::string::npos ? 3 : name.find("2d") != std::string::npos ? 2 : 1;
}

void check_input(Lowerer& L, Value x) { L.require_claimed(L.dtype(x)); }

/// max_pool{2,3}d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
std::vector<Value> max_pool(Lowerer& L) {
  Value x = L.tensor(0);
  check_input(L, x);
  const Windows w = sliding(L.shape(x), spatial_dims(L), L.ints(1), L.ints(2), L.ints(3), L.ints(4),
                            L.flag(5), true);
  return max_outputs(L, x, w);
}

/// adaptive_max_pool{2,3}d(self, output_size)
std::vector<Value> adaptive_max_pool(Lowerer& L) {
  Value x = L.tensor(0);
  check_input(L, x);
  return max_outputs(L, x, adaptive(L.shape(x), spatial_dims(L), L.ints(1)));
}

/// The gradient of max pooling: grad_output [*lead, *out] added at indices into self's shape.
Value max_pool_grad(Lowerer& L, Value grad, Value self, Value indices) {
  const DType d = L.dtype(self);
  const Dims ss = L.shape(self), gs = L.shape(grad);
  if (L.shape(indices) != gs || !hlo::is_integer(L.dtype(indices)))
    throw Unsupported("max pooling backward: indices of another shape than grad_output");
  const std::size_t n = spatial_dims(L);
  if (ss.size() != gs.size() || ss.size() < n + 1) throw Unsupported("pooling backward ranks");
  std::int64_t b = 1, plane = 1, p = 1;
  for (std::size_t i = 0; i < ss.size(); ++i) {
    if (i + n < ss.size()) {
      if (ss[i] != gs[i]) throw Unsupported("pooling backward leading dims");
      b *= ss[i];
    } else {
      plane *= ss[i];
      p *= gs[i];
    }
  }
  // Row r = batch * plane + index; an index outside the plane is dropped.
  if (b == 0) return zeros(L, ss, d);
  Value idx = L.b.reshape(L.convert(indices, DType::kI64), {b, p});
  Value inside =
      L.b.binary(hlo::OpKind::kAnd, L.b.compare(Comparison::kGE, idx, L.full_like(idx, 0)),
                 L.b.compare(Comparison::kLT, idx, L.full_like(idx, plane)));
  Value base = L.b.mul(L.b.iota(TensorType(DType::kI64, {b, p}), 0),
                       L.full_like(idx, static_cast<double>(plane)));
  Value rows = L.b.select(inside, L.b.add(base, idx), L.full_like(idx, -1));
  // The CPU adds each gradient in the input's type (rounding every sum), in output order.
  Value upd = L.b.reshape(L.convert(grad, d), {b * p, 1});
  Value out = scatter_rows(L, upd, L.b.reshape(rows, {b * p}), b * plane);
  return L.convert(L.b.reshape(out, ss), d);
}

/// Sum of each window in the accumulate type, [B, P].
Value window_sum(Lowerer& L, const Gathered& gw, DType acc) {
  const Dims s = L.shape(gw.values);
  Value inside = L.b.broadcast_in_dim(gw.inside, s, {1, 2});
  Value v = L.convert(gw.values, acc);
  v = L.b.select(inside, v, L.full_like(v, 0));
  return L.reduce(v, {2}, ReduceKind::kAdd, false);
}

/// The [P] divisors of avg pooling: the product of the axes' factors (a window without input
/// elements divides its zero sum by 1), or |override|.
Value avg_divisor(Lowerer& L, const Windows& w, std::optional<std::int64_t> override_value,
                  DType acc) {
  if (override_value)
    return L.b.broadcast_to(L.constant(static_cast<double>(*override_value), acc), {w.outputs()});
  std::vector<double> div(1, 1.0);
  for (const Axis& a : w.axes) {
    std::vector<double> next;
    for (double v : div)
      for (double f : a.divisor) next.push_back(v * f);
    div = std::move(next);
  }
  for (double& v : div)
    if (v == 0) v = 1;
  return L.b.constant(hlo::Literal::from_doubles(TensorType(acc, {w.outputs()}), div));
}

/// Divides |sum| [B, P] by each adaptive axis's window length in turn, as the CPU does,
/// rounding each quotient to |round_to| (the backward's scalar_t arithmetic) when given.
Value adaptive_divide(Lowerer& L, Value sum, const Windows& w,
                      std::optional<DType> round_to = std::nullopt) {
  const Dims s = L.shape(sum);
  Dims full = {s[0]};
  for (const Axis& a : w.axes) full.push_back(a.out);
  Value v = L.b.reshape(sum, full);
  for (std::size_t d = 0; d < w.axes.size(); ++d) {
    const Axis& a = w.axes[d];
    Value f =
        L.b.constant(hlo::Literal::from_doubles(TensorType(L.dtype(sum), {a.out}), a.divisor));
    v = L.b.div(v, L.b.broadcast_in_dim(f, full, {static_cast<std::int64_t>(d + 1)}));
    if (round_to) v = L.convert(L.convert(v, *round_to), L.dtype(sum));
  }
  return L.b.reshape(v, s);
}

/// The windows of avg_pool{2,3}d's arguments (self, kernel, stride, padding, ceil_mode,
/// count_include_pad, divisor_override) starting at |first|, for an input of |shape|.
Windows avg_windows(Lowerer& L, const Dims& shape, int first) {
  return sliding(shape, spatial_dims(L), L.ints(first), L.ints(first + 1), L.ints(first + 2), {1},
                 L.flag(first + 3), L.flag(first + 4));
}

std::optional<std::int64_t> divisor_override(Lowerer& L, int i) {
  if (!L.has(i)) return std::nullopt;
  const std::int64_t v = L.integer(i);
  if (v == 0) throw Unsupported("divisor_override of 0 (PyTorch's CPU kernel reports it)");
  return v;
}

/// The accumulate type of avg pooling: float32 for floats, int64 for integers.
DType avg_acc(DType d) { return hlo::is_float(d) ? opmath(d) : DType::kI64; }

/// avg_pool{2,3}d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
/// divisor_override)
std::vector<Value> avg_pool(Lowerer& L) {
  Value x = L.tensor(0);
  check_input(L, x);
  const DType d = L.dtype(x), acc = avg_acc(d);
  const Windows w = avg_windows(L, L.shape(x), 1);
  if (w.batch() == 0) return {L.convert(zeros(L, w.out_shape(), d), L.out_dtype(0, d))};
  Value sum = window_sum(L, gather_windows(L, x, w), acc);
  Value div = avg_divisor(L, w, divisor_override(L, 6), acc);
  Value y = L.b.div(sum, L.b.broadcast_in_dim(div, L.shape(sum), {1}));
  return {L.convert(L.b.reshape(y, w.out_shape()), L.out_dtype(0, d))};
}

/// The sum of each window [B, P] in |d| itself, rounded after every addition in scan order.
Value rounded_window_sum(Lowerer& L, const Gathered& gw, DType d) {
  const Dims s = L.shape(gw.values);
  Value inside = L.b.broadcast_in_dim(gw.inside, s, {1, 2});
  Value v = L.b.select(inside, gw.values, L.full_like(gw.values, 0));
  Value total = L.b.broadcast_to(L.constant(0, d), {s[0], s[1]});
  for (std::int64_t k = 0; k < s[2]; ++k) {
    Value vk = L.b.reshape(L.b.slice(v, {0, 0, k}, {s[0], s[1], k + 1}), {s[0], s[1]});
    total = L.convert(L.b.add(L.convert(total, DType::kF32), L.convert(vk, DType::kF32)), d);
  }
  return total;
}

/// _adaptive_avg_pool{2,3}d(self, output_size). The CPU's 3-d kernel sums and divides
/// float16/bfloat16 in that type (the 2-d one in float32).
std::vector<Value> adaptive_avg_pool(Lowerer& L) {
  Value x = L.tensor(0);
  check_input(L, x);
  const DType d = L.dtype(x);
  const Windows w = adaptive(L.shape(x), spatial_dims(L), L.ints(1));
  if (w.batch() == 0) return {L.convert(zeros(L, w.out_shape(), d), L.out_dtype(0, d))};
  const Gathered gw = gather_windows(L, x, w);
  Value y = w.axes.size() == 3 && opmath(d) != d
                ? adaptive_divide(L, L.convert(rounded_window_sum(L, gw, d), DType::kF32), w, d)
                : adaptive_divide(L, window_sum(L, gw, opmath(d)), w);
  return {L.convert(L.b.reshape(y, w.out_shape()), L.out_dtype(0, d))};
}

/// Adds |per_output| [B, P] (the gradient of each output, already divided) to every input
/// element of its window: the [*lead, *plane] input gradient in |like|'s dtype. The CPU adds
/// in that dtype, rounding every sum, in output order; so does the scatter.
Value spread(Lowerer& L, Value per_output, const Windows& w, Value like) {
  const std::int64_t b = w.batch(), p = w.outputs(), k = w.window();
  if (b == 0) return zeros(L, L.shape(like), L.dtype(like));
  Value pos = positions(L, w);
  // Rows of the scatter are plane positions, each a [B] vector: [P * K, B] into [S, B].
  per_output = L.convert(per_output, L.dtype(like));
  Value upd = L.b.broadcast_in_dim(L.b.transpose(per_output, {1, 0}), {p, k, b}, {0, 2});
  Value out = scatter_rows(L, L.b.reshape(upd, {p * k, b}), L.b.reshape(pos, {p * k}), w.plane());
  out = L.b.transpose(out, {1, 0});
  return L.convert(L.b.reshape(out, L.shape(like)), L.dtype(like));
}

void check_grad(Lowerer& L, Value grad, const Windows& w) {
  if (L.shape(grad) != w.out_shape())
    throw Unsupported("pooling backward: grad_output of another shape than the output");
}

/// avg_pool{2,3}d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
/// count_include_pad, divisor_override)
std::vector<Value> avg_pool_backward(Lowerer& L) {
  Value grad = L.tensor(0), x = L.tensor(1);
  check_input(L, x);
  const DType d = L.dtype(x), c = opmath(d);
  if (!hlo::is_float(d)) throw Unsupported("avg pooling backward of an integer tensor");
  const Windows w = avg_windows(L, L.shape(x), 2);
  check_grad(L, grad, w);
  Value g = L.b.reshape(L.convert(grad, c), {w.batch(), w.outputs()});
  Value div = avg_divisor(L, w, divisor_override(L, 7), c);
  g = L.b.div(g, L.b.broadcast_in_dim(div, L.shape(g), {1}));
  return {L.convert(spread(L, g, w, x), L.out_dtype(0, d))};
}

/// _adaptive_avg_pool{2,3}d_backward(grad_output, self)
std::vector<Value> adaptive_avg_pool_backward(Lowerer& L) {
  Value grad = L.tensor(0), x = L.tensor(1);
  check_input(L, x);
  const DType d = L.dtype(x), c = opmath(d);
  const std::size_t n = spatial_dims(L);
  const Dims gs = L.shape(grad);
  if (gs.size() < n) throw Unsupported("adaptive pooling backward ranks");
  const Windows w =
      adaptive(L.shape(x), n, Dims(gs.end() - static_cast<std::ptrdiff_t>(n), gs.end()));
  check_grad(L, grad, w);
  Value g = L.b.reshape(L.convert(grad, c), {w.batch(), w.outputs()});
  return {L.convert(spread(L, adaptive_divide(L, g, w, d), w, x), L.out_dtype(0, d))};
}

/// max_pool{2,3}d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
/// dilation, ceil_mode, indices)
std::vector<Value> max_pool_backward(Lowerer& L) {
  Value grad = L.tensor(0), x = L.tensor(1);
  check_input(L, x);
  if (!hlo::is_float(L.dtype(x))) throw Unsupported("max pooling backward of an integer tensor");
  const Windows w = sliding(L.shape(x), spatial_dims(L), L.ints(2), L.ints(3), L.ints(4), L.ints(5),
                            L.flag(6), true);
  check_grad(L, grad, w);
  return {L.convert(max_pool_grad(L, grad, x, L.tensor(7)), L.out_dtype(0, L.dtype(x)))};
}

/// adaptive_max_pool{2,3}d_backward(grad_output, self, indices)
std::vector<Value> adaptive_max_pool_backward(Lowerer& L) {
  Value grad = L.tensor(0), x = L.tensor(1);
  check_input(L, x);
  return {L.convert(max_pool_grad(L, grad, x, L.tensor(2)), L.out_dtype(0, L.dtype(x)))};
}

}  // namespace

void add_pool_lowerings(std::vector<OpLowering>& r) {
  const std::vector<DType> max_types = floats_and_ints();
  std::vector<DType> avg_types = floats();
  avg_types.push_back(DType::kI64);
  add(r,
      {"max_pool2d_with_indices", "max_pool2d_with_indices.out", "max_pool3d_with_indices",
       "max_pool3d_with_indices.out"},
      zero_size_ok(entry(max_types, max_pool)));
  add(r,
      {"max_pool2d_with_indices_backward", "max_pool2d_with_indices_backward.grad_input",
       "max_pool3d_with_indices_backward", "max_pool3d_with_indices_backward.grad_input"},
      zero_size_ok(entry(floats(), max_pool_backward)));
  // The CPU's avg_pool3d takes no float16/bfloat16.
  add(r, {"avg_pool2d", "avg_pool2d.out"}, zero_size_ok(entry(avg_types, avg_pool)));
  add(r, {"avg_pool3d", "avg_pool3d.out"},
      zero_size_ok(entry({DType::kF32, DType::kI64}, avg_pool)));
  add(r, {"avg_pool2d_backward", "avg_pool2d_backward.grad_input"},
      zero_size_ok(entry(floats(), avg_pool_backward)));
  add(r, {"avg_pool3d_backward", "avg_pool3d_backward.grad_input"},
      zero_size_ok(entry({DType::kF32}, avg_pool_backward)));
  add(r,
      {"_adaptive_avg_pool2d", "_adaptive_avg_pool2d.out", "_adaptive_avg_pool3d",
       "_adaptive_avg_pool3d.out"},
      zero_size_ok(entry(floats(), adaptive_avg_pool)));
  add(r,
      {"_adaptive_avg_pool2d_backward", "_adaptive_avg_pool2d_backward.out",
       "_adaptive_avg_pool3d_backward", "_adaptive_avg_pool3d_backward.out"},
      zero_size_ok(entry(floats(), adaptive_avg_pool_backward)));
  add(r,
      {"adaptive_max_pool2d", "adaptive_max_pool2d.out", "adaptive_max_pool3d",
       "adaptive_max_pool3d.out"},
      zero_size_ok(entry(floats(), adaptive_max_pool)));
  add(r,
      {"adaptive_max_pool2d_backward", "adaptive_max_pool2d_backward.grad_input",
       "adaptive_max_pool3d_backward", "adaptive_max_pool3d_backward.grad_input"},
      zero_size_ok(entry(floats(), adaptive_max_pool_backward)));
}

}  // namespace vtrn::lowering
