// Convolutions: convolution_overrideable (what at::convolution calls on this device) and
// convolution_backward_overrideable, each as stablehlo.convolution. Floats compute in float32
// and round once on store, as PyTorch's CPU kernels do.
//
// With input x [N, C, *S], weight w [O, C/g, *K], stride s, padding p, dilation d and g groups:
//  * forward: y = conv(x, w) with window_strides s, padding [p, p], rhs_dilation d,
//    feature_group_count g;
//  * the input gradient is the transposed convolution of dy with w: the window reversed and its
//    in/out features swapped per group, dy dilated by s (lhs_dilation), padded by d*(K-1) - p
//    below and as much above as gives back |S|;
//  * the weight gradient correlates x with dy: x's channels become the batch (in g batch groups),
//    its batch the features, dy the kernel dilated by s, moved by d;
//  * a transposed convolution (transposed = true, w [C, O/g, *K]) is the input gradient of the
//    ordinary convolution with the same attributes, its backward the ordinary forward and the
//    weight gradient with x and dy exchanged.
#include "vtrn/compiler/aten_conv2d.h"
#include "vtrn/hlo/convolution.h"
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::ConvAttrs;
using hlo::ConvDimensionNumbers;
using hlo::ReduceKind;
using Dims = std::vector<std::int64_t>;

/// The static attributes of a call, per spatial dim.
struct ConvParams {
  Dims stride, padding, dilation, output_padding;
  bool transposed = false;
  std::int64_t groups = 1;
  std::size_t spatial = 0;
};

/// Reads stride, padding, dilation, transposed, output_padding, groups from argument |first|
/// on, for a weight of rank |rank|.
ConvParams params(Lowerer& L, int first, int rank) {
  ConvParams p;
  p.spatial = static_cast<std::size_t>(rank - 2);
  auto expand = [&](Dims v, const char* what) {
    if (v.size() == 1 && p.spatial > 1) v.assign(p.spatial, v[0]);
    if (v.size() != p.spatial)
      throw Unsupported(std::string("convolution ") + what + " of the wrong length");
    return v;
  };
  p.stride = expand(L.ints(first), "stride");
  p.padding = expand(L.ints(first + 1), "padding");
  p.dilation = expand(L.ints(first + 2), "dilation");
  p.transposed = L.flag(first + 3);
  p.output_padding = expand(L.ints(first + 4), "output_padding");
  p.groups = L.integer(first + 5);
  for (std::size_t k = 0; k < p.spatial; ++k)
    if (p.stride[k] < 1 || p.dilation[k] < 1 || p.padding[k] < 0 || p.output_padding[k] < 0)
      throw Unsupported("convolution attributes out of range (PyTorch's CPU kernel reports it)");
  if (p.groups < 1) throw Unsupported("convolution groups < 1");
  return p;
}

ConvAttrs base_attrs(std::size_t spatial) {
  ConvAttrs a;
  a.window_strides.assign(spatial, 1);
  a.padding_low.assign(spatial, 0);
  a.padding_high.assign(spatial, 0);
  a.lhs_dilation.assign(spatial, 1);
  a.rhs_dilation.assign(spatial, 1);
  a.dims = ConvDimensionNumbers::channels_first(static_cast<int>(spatial));
  return a;
}

/// The ordinary convolution of x with w. |crop_output_padding|: the input gradient of a
/// transposed convolution, whose output_padding rows the ordinary convolution must not see
/// (they would add floor(output_padding / stride) result rows).
Value conv_forward(Lowerer& L, Value x, Value w, const ConvParams& p,
                   bool crop_output_padding = false) {
  ConvAttrs a = base_attrs(p.spatial);
  a.window_strides = p.stride;
  a.padding_low = a.padding_high = p.padding;
  if (crop_output_padding)
    for (std::size_t k = 0; k < p.spatial; ++k) a.padding_high[k] -= p.output_padding[k];
  a.rhs_dilation = p.dilation;
  a.feature_group_count = p.groups;
  return L.b.convolution(x, w, a);
}

/// w [A, B/g... ] as [g, A/g, B, *K] -> [B*g, A/g, *K] with the window reversed: the kernel of
/// the transposed convolution.
Value transposed_kernel(Lowerer& L, Value w, std::int64_t groups) {
  const Dims ws = L.shape(w);
  const int rank = static_cast<int>(ws.size());
  const std::int64_t a = ws[0], bsz = ws[1];
  Dims grouped{groups, a / groups, bsz};
  grouped.insert(grouped.end(), ws.begin() + 2, ws.end());
  Value v = L.b.reshape(w, grouped);
  Dims perm{0, 2, 1};
  for (int k = 3; k < rank + 1; ++k) perm.push_back(k);
  v = L.b.transpose(v, perm);
  Dims flat{groups * bsz, a / groups};
  flat.insert(flat.end(), ws.begin() + 2, ws.end());
  v = L.b.reshape(v, flat);
  Dims spatial;
  for (int k = 2; k < rank; ++k) spatial.push_back(k);
  return L.b.reverse(v, spatial);
}

/// The gradient of conv_forward with respect to its input, of spatial size |in_sizes|: the
/// transposed convolution of dy with w.
Value conv_input_grad(Lowerer& L, Value dy, Value w, const ConvParams& p, const Dims& in_sizes) {
  const Dims ws = L.shape(w), gs = L.shape(dy);
  ConvAttrs a = base_attrs(p.spatial);
  for (std::size_t k = 0; k < p.spatial; ++k) {
    const std::int64_t window = (ws[k + 2] - 1) * p.dilation[k];
    a.lhs_dilation[k] = p.stride[k];
    a.rhs_dilation[k] = p.dilation[k];
    a.padding_low[k] = window - p.padding[k];
    a.padding_high[k] = in_sizes[k] - 1 - (gs[k + 2] - 1) * p.stride[k] + p.padding[k];
  }
  a.feature_group_count = p.groups;
  return L.b.convolution(dy, transposed_kernel(L, w, p.groups), a);
}

/// The gradient of conv_forward with respect to its weight, of window |window|: x [N, C, *S]
/// correlated with dy [N, O, *S'] -> [O, C/g, *K].
Value conv_weight_grad(Lowerer& L, Value x, Value dy, const ConvParams& p, const Dims& window) {
  const Dims xs = L.shape(x), gs = L.shape(dy);
  ConvAttrs a = base_attrs(p.spatial);
  // x: its channels are the batch and its batch the features; dy: the batch is the kernel's
  // input features and the channels its output features; the result is [O, C/g, *K].
  a.dims.input_batch = 1;
  a.dims.input_feature = 0;
  a.dims.kernel_input_feature = 0;
  a.dims.kernel_output_feature = 1;
  a.dims.output_batch = 1;
  a.dims.output_feature = 0;
  for (std::size_t k = 0; k < p.spatial; ++k) {
    a.window_strides[k] = p.dilation[k];
    a.rhs_dilation[k] = p.stride[k];
    a.padding_low[k] = p.padding[k];
    a.padding_high[k] = (window[k] - 1) * p.dilation[k] + (gs[k + 2] - 1) * p.stride[k] -
                        p.padding[k] - xs[k + 2] + 1;
  }
  a.batch_group_count = p.groups;
  return L.b.convolution(x, dy, a);
}

compiler::AtenConv2dConfig conv2d_config(Lowerer& L, Value x, Value w, const ConvParams& p,
                                         bool bias) {
  compiler::AtenConv2dConfig config;
  for (int i = 0; i < 2; ++i) {
    config.stride[i] = p.stride[i];
    config.padding[i] = p.padding[i];
    config.dilation[i] = p.dilation[i];
  }
  config.groups = p.groups;
  config.bias = bias;
  const Dims xs = L.shape(x), ws = L.shape(w);
  if (ws[0] % p.groups != 0 || xs[1] != ws[1] * p.groups)
    throw Unsupported("convolution groups that do not divide the channels");
  const auto out = compiler::aten_conv2d_output_size(config, L.b.type(x), L.b.type(w));
  if (out[0] <= 0 || out[1] <= 0)
    throw Unsupported(
        "a convolution window larger than its padded input (PyTorch's CPU kernel "
        "reports it)");
  return config;
}

/// The float32 output type of the 2-D convolution of |x| with |w|.
hlo::TensorType aten_conv2d_output_type(Lowerer& L, Value x, Value w, const ConvParams& p) {
  const auto out =
      compiler::aten_conv2d_output_size(conv2d_config(L, x, w, p, false), L.b.type(x), L.b.type(w));
  return hlo::TensorType(DType::kF32, {L.shape(x)[0], L.shape(w)[0], out[0], out[1]});
}

/// A float32 2-D convolution and its bias (argument 2) as ATen's CPU convolution computes them
/// (compiler/aten_conv2d.h).
Value aten_conv2d(Lowerer& L, Value x, Value w, const ConvParams& p) {
  const compiler::AtenConv2dConfig config = conv2d_config(L, x, w, p, L.has(2));
  std::vector<Value> operands{x, w};
  if (config.bias) operands.push_back(L.tensor(2));
  return L.b.custom_call(std::string(compiler::kAtenConv2dTarget), std::move(operands),
                         {aten_conv2d_output_type(L, x, w, p)},
                         compiler::aten_conv2d_config(config))[0];
}

/// Its gradients, the ones |mask| asks for, as ATen's convolution_backward computes them.
std::vector<Value> aten_conv2d_backward(Lowerer& L, Value dy, Value x, Value w, const ConvParams& p,
                                        const Dims& mask) {
  compiler::AtenConv2dBackwardConfig config;
  config.forward = conv2d_config(L, x, w, p, false);
  for (std::size_t i = 0; i < 3; ++i) config.grads[i] = mask[i] != 0;
  const std::vector<Value> r =
      L.b.custom_call(std::string(compiler::kAtenConv2dBackwardTarget), {dy, x, w},
                      {L.b.type(x), L.b.type(w), hlo::TensorType(DType::kF32, {L.shape(w)[0]})},
                      compiler::aten_conv2d_backward_config(config));
  std::vector<Value> out(3, kUnchanged);
  for (std::size_t i = 0; i < 3; ++i)
    if (mask[i]) out[i] = r[i];
  return out;
}

Dims spatial_of(const Dims& shape) { return Dims(shape.begin() + 2, shape.end()); }

void check_operands(Lowerer& L, Value x, Value w) {
  const DType d = L.dtype(x);
  L.require_claimed(d);
  if (L.dtype(w) != d) throw Unsupported("convolution operands of different dtypes");
  if (L.rank(x) < 3 || L.rank(x) != L.rank(w)) throw Unsupported("convolution operand ranks");
}

}  // namespace

void add_conv_lowerings(std::vector<OpLowering>& r) {
  // convolution_overrideable(input, weight, bias?, stride, padding, dilation, transposed,
  //   output_padding, groups)
  add(r, {"convolution_overrideable"}, entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value x = L.tensor(0), w = L.tensor(1);
        check_operands(L, x, w);
        const DType d = L.dtype(x), c = opmath(d);
        const ConvParams p = params(L, 3, L.rank(w));
        if (!p.transposed && d == DType::kF32 && L.rank(x) == 4 &&
            (!L.has(2) || (L.dtype(L.tensor(2)) == DType::kF32 && L.rank(L.tensor(2)) == 1)))
          return {aten_conv2d(L, x, w, p)};
        Value xc = L.convert(x, c), wc = L.convert(w, c);
        Value y;
        if (!p.transposed) {
          y = conv_forward(L, xc, wc, p);
        } else {
          // The output size PyTorch gives a transposed convolution.
          const Dims xs = L.shape(x), ws = L.shape(w);
          Dims out;
          for (std::size_t k = 0; k < p.spatial; ++k)
            out.push_back((xs[k + 2] - 1) * p.stride[k] - 2 * p.padding[k] +
                          p.dilation[k] * (ws[k + 2] - 1) + p.output_padding[k] + 1);
          y = conv_input_grad(L, xc, wc, p, out);
        }
        if (L.has(2)) {
          Value bias = L.tensor(2);
          if (L.rank(bias) != 1) throw Unsupported("convolution bias of rank != 1");
          y = L.b.add(y, L.b.broadcast_in_dim(L.convert(bias, c), L.shape(y), {1}));
        }
        return {L.convert(y, d)};
      }));
  // convolution_backward_overrideable(grad_output, input, weight, stride, padding, dilation,
  //   transposed, output_padding, groups, output_mask) -> (grad_input, grad_weight, grad_bias);
  // a gradient the mask leaves out is not computed (an undefined tensor).
  add(r, {"convolution_backward_overrideable"},
      entry(floats(), [](Lowerer& L) -> std::vector<Value> {
        Value dy = L.tensor(0), x = L.tensor(1), w = L.tensor(2);
        check_operands(L, x, w);
        if (L.dtype(dy) != L.dtype(x)) throw Unsupported("convolution gradient dtype");
        const DType d = L.dtype(x), c = opmath(d);
        const ConvParams p = params(L, 3, L.rank(w));
        const Dims mask = L.ints(9);
        if (mask.size() != 3) throw Unsupported("convolution output_mask");
        if (!p.transposed && d == DType::kF32 && L.rank(x) == 4 &&
            L.b.type(dy) == aten_conv2d_output_type(L, x, w, p))
          return aten_conv2d_backward(L, dy, x, w, p, mask);
        Value dyc = L.convert(dy, c), xc = L.convert(x, c), wc = L.convert(w, c);
        std::vector<Value> out(3, kUnchanged);
        if (mask[0])
          out[0] = p.transposed ? conv_forward(L, dyc, wc, p, true)
                                : conv_input_grad(L, dyc, wc, p, spatial_of(L.shape(x)));
        if (mask[1])
          out[1] = p.transposed ? conv_weight_grad(L, dyc, xc, p, spatial_of(L.shape(w)))
                                : conv_weight_grad(L, xc, dyc, p, spatial_of(L.shape(w)));
        if (mask[2]) {
          Dims dims{0};
          for (int k = 2; k < L.rank(dy); ++k) dims.push_back(k);
          out[2] = L.reduce(dyc, dims, ReduceKind::kAdd, false);
        }
        for (Value& v : out)
          if (v.id != kUnchanged.id) v = L.convert(v, d);
        return out;
      }));
}

}  // namespace vtrn::lowering
