// The fused RNN cells of `neuron`. nn.LSTM and nn.GRU run their cells through
// _thnn_fused_lstm_cell / _thnn_fused_gru_cell on CUDA and on every PrivateUse1 device
// (ATen's RNN.cpp), and the CPU has no kernel for them to fall back to. These compose them
// from device ops with the gate order, saved workspace and gradients of PyTorch's CUDA kernels
// (aten/src/ATen/native/cuda/RNN.cu), which their autograd formulas expect.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <optional>
#include <tuple>
#include <vector>

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "vtrn/torch/op_tracking.h"

namespace vtrn::torch_adapter {
namespace {

bool defined(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

void check_cell(const char* op, const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                const at::Tensor& state, int64_t gates) {
  TORCH_CHECK(state.dim() == 2, op, ": expected a 2-d hidden state, got ", state.sizes());
  const int64_t n = state.size(0);
  const int64_t h = state.size(1);
  for (const at::Tensor* t : {&input_gates, &hidden_gates}) {
    TORCH_CHECK(t->dim() == 2 && t->size(0) == n && t->size(1) == gates * h, op,
                ": expected gates of size [", n, ", ", gates * h, "] for a hidden state of size ",
                state.sizes(), ", got ", t->sizes());
  }
}

// gates = input_gates + hidden_gates + input_bias + hidden_bias; i, f, g, o activated;
// cy = f * cx + i * g; hy = o * tanh(cy). The workspace holds the activated gates.
std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  VTRN_RECORD_OP("_thnn_fused_lstm_cell");
  check_cell("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, 4);
  TORCH_CHECK(defined(input_bias) == defined(hidden_bias),
              "_thnn_fused_lstm_cell: expected both biases or neither");
  at::Tensor gates = input_gates + hidden_gates;
  if (defined(input_bias)) gates = gates + *input_bias + *hidden_bias;
  std::vector<at::Tensor> g = gates.chunk(4, 1);
  const at::Tensor ig = at::sigmoid(g[0]);
  const at::Tensor fg = at::sigmoid(g[1]);
  const at::Tensor cg = at::tanh(g[2]);
  const at::Tensor og = at::sigmoid(g[3]);
  at::Tensor cy = fg * cx + ig * cg;
  at::Tensor hy = og * at::tanh(cy);
  at::Tensor workspace = at::cat({ig, fg, cg, og}, 1);
  return {hy, cy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  VTRN_RECORD_OP("_thnn_fused_lstm_cell_backward_impl");
  if (!defined(grad_hy) && !defined(grad_cy)) return {at::Tensor(), at::Tensor(), at::Tensor()};
  std::vector<at::Tensor> w = workspace.chunk(4, 1);
  const at::Tensor &ig = w[0], &fg = w[1], &cg = w[2], &og = w[3];
  const at::Tensor tanh_cy = at::tanh(cy);
  at::Tensor gcx = at::zeros_like(cx);
  at::Tensor gog = at::zeros_like(cx);
  if (defined(grad_hy)) {
    gog = *grad_hy * tanh_cy;
    gcx = *grad_hy * og * (1 - tanh_cy * tanh_cy);
  }
  if (defined(grad_cy)) gcx = gcx + *grad_cy;
  const at::Tensor gig = gcx * cg * (1 - ig) * ig;
  const at::Tensor gfg = gcx * cx * (1 - fg) * fg;
  const at::Tensor gcg = gcx * ig * (1 - cg * cg);
  gog = gog * (1 - og) * og;
  at::Tensor grad_gates = at::cat({gig, gfg, gcg, gog}, 1);
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, gcx * fg, grad_bias};
}

// r, i from sigmoids; n = tanh(in + b_in + r * (hn + b_hn)); hy = n + i * (hx - n). The
// workspace holds r, i, n, hx and hn + b_hn, in that order.
std::tuple<at::Tensor, at::Tensor> gru_cell(const at::Tensor& input_gates,
                                            const at::Tensor& hidden_gates, const at::Tensor& hx,
                                            const std::optional<at::Tensor>& input_bias,
                                            const std::optional<at::Tensor>& hidden_bias) {
  VTRN_RECORD_OP("_thnn_fused_gru_cell");
  check_cell("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, 3);
  TORCH_CHECK(defined(input_bias) == defined(hidden_bias),
              "_thnn_fused_gru_cell: expected both biases or neither");
  at::Tensor in_gates = input_gates;
  at::Tensor h_gates = hidden_gates;
  if (defined(input_bias)) {
    in_gates = in_gates + *input_bias;
    h_gates = h_gates + *hidden_bias;
  }
  std::vector<at::Tensor> ic = in_gates.chunk(3, 1);
  std::vector<at::Tensor> hc = h_gates.chunk(3, 1);
  const at::Tensor rg = at::sigmoid(ic[0] + hc[0]);
  const at::Tensor ig = at::sigmoid(ic[1] + hc[1]);
  const at::Tensor ng = at::tanh(ic[2] + rg * hc[2]);
  at::Tensor hy = ng + ig * (hx - ng);
  at::Tensor workspace = at::cat({rg, ig, ng, hx, hc[2]}, 1);
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  VTRN_RECORD_OP("_thnn_fused_gru_cell_backward");
  std::vector<at::Tensor> w = workspace.chunk(5, 1);
  const at::Tensor &rg = w[0], &ig = w[1], &ng = w[2], &hx = w[3], &hn = w[4];
  const at::Tensor gig = grad_hy * (hx - ng) * (1 - ig) * ig;
  at::Tensor ghx = grad_hy * ig;
  const at::Tensor gin = grad_hy * (1 - ig) * (1 - ng * ng);
  const at::Tensor ghn = gin * rg;
  const at::Tensor grg = gin * hn * (1 - rg) * rg;
  at::Tensor grad_input_gates = at::cat({grg, gig, gin}, 1);
  at::Tensor grad_hidden_gates = at::cat({grg, gig, ghn}, 1);
  at::Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : at::Tensor();
  return {grad_input_gates, grad_hidden_gates, ghx, grad_input_bias, grad_hidden_bias};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", lstm_cell_backward);
  m.impl("_thnn_fused_gru_cell", gru_cell);
  m.impl("_thnn_fused_gru_cell_backward", gru_cell_backward);
}

}  // namespace
}  // namespace vtrn::torch_adapter
