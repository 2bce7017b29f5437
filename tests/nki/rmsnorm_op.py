"""An RMSNorm custom op made of NKI kernels: a forward kernel, a backward kernel (its weight
gradient a Tensor-engine row sum accumulating in PSUM), the nki_op pair and register_autograd.
The eager and torch.compile tests train with it."""

import torch

import neuronxcc.nki as lnki
import neuronxcc.nki.isa as lnisa
import neuronxcc.nki.language as nl
from torch_neuronx import nki_op, wrap_nki

EPS = 1e-6


@lnki.jit
def rmsnorm_fwd_kernel(x, g):
    rows, n = x.shape
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.arange(128)[:, None], nl.arange(n)[None, :]
    g_tile = nl.load(g.reshape((1, n))[nl.arange(1)[:, None], iy]).broadcast_to((128, n))
    for i in nl.affine_range((rows + 127) // 128):
        valid = i * 128 + ix < rows
        x_tile = nl.load(x[i * 128 + ix, iy], mask=valid)
        r = nl.rsqrt(nl.add(nl.sum(nl.square(x_tile), axis=[1]) / n, EPS))
        nl.store(y[i * 128 + ix, iy], nl.multiply(nl.multiply(x_tile, r), g_tile), mask=valid)
    return y


@lnki.jit
def rmsnorm_bwd_kernel(dy, x, g):
    """dx = r * (dy * g) - x * r^3 * mean(dy * g * x); dg = sum over rows of dy * x * r, the row
    sum done by the Tensor engine (ones^T @ tile) accumulating in PSUM."""
    rows, n = x.shape
    dx = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dg = nl.ndarray((n,), dtype=g.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.arange(128)[:, None], nl.arange(n)[None, :]
    g_tile = nl.load(g.reshape((1, n))[nl.arange(1)[:, None], iy]).broadcast_to((128, n))
    ones = nl.full((128, 1), 1.0, dtype=nl.float32)
    dg_psum = nl.zeros((1, n), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range((rows + 127) // 128):
        valid = i * 128 + ix < rows
        x_tile = nl.zeros((128, n), dtype=nl.float32)  # rows past the end stay 0 for the row sum
        dy_tile = nl.zeros((128, n), dtype=nl.float32)
        x_tile[...] = nl.load(x[i * 128 + ix, iy], mask=valid)
        dy_tile[...] = nl.load(dy[i * 128 + ix, iy], mask=valid)
        r = nl.rsqrt(nl.add(nl.sum(nl.square(x_tile), axis=[1]) / n, EPS))
        dyg = nl.multiply(dy_tile, g_tile)
        c = nl.sum(nl.multiply(dyg, x_tile), axis=[1]) / n
        r3c = nl.multiply(nl.multiply(nl.multiply(r, r), r), c)
        dx_tile = nl.subtract(nl.multiply(dyg, r), nl.multiply(x_tile, r3c))
        nl.store(dx[i * 128 + ix, iy], dx_tile, mask=valid)
        dg_psum += lnisa.nc_matmul(ones, nl.multiply(nl.multiply(dy_tile, x_tile), r))
    nl.store(dg, dg_psum)
    return dx, dg


@nki_op("vtrn_nki_test::rmsnorm", mutates_args=())
def rmsnorm(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return wrap_nki(rmsnorm_fwd_kernel)(x, g)


@nki_op("vtrn_nki_test::rmsnorm_bwd", mutates_args=())
def rmsnorm_bwd(
    dy: torch.Tensor, x: torch.Tensor, g: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return wrap_nki(rmsnorm_bwd_kernel)(dy, x, g)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad):
    x, g = ctx.saved_tensors
    return rmsnorm_bwd(grad.contiguous(), x, g)


rmsnorm.register_autograd(_backward, setup_context=_setup)


def reference_rmsnorm(x, g):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), g, eps=EPS)


class Net(torch.nn.Module):
    """Linear, the norm under test, ReLU, Linear: the training tests' model."""

    def __init__(self, norm):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 256)
        self.g = torch.nn.Parameter(torch.ones(256))
        self.fc2 = torch.nn.Linear(256, 8)
        self.norm = norm

    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x), self.g)))


def train_beside_pytorch(steps: int, compile_model=None) -> tuple[list, list]:
    """Trains Net(rmsnorm) on the neuron device (compiled by |compile_model| if given) and
    Net(reference_rmsnorm) on the CPU from the same weights and data, step by step; returns
    (neuron losses, CPU losses)."""
    torch.manual_seed(0)
    ref = Net(reference_rmsnorm)
    net = Net(rmsnorm)
    net.load_state_dict(ref.state_dict())
    net.to("neuron")
    model = compile_model(net) if compile_model else net
    data, target = torch.randn(160, 64), torch.randn(160, 8)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.05)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    losses, ref_losses = [], []
    for _ in range(steps):
        for m, optimizer, log, dev in (
            (ref, opt_ref, ref_losses, "cpu"),
            (model, opt, losses, "neuron"),
        ):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(m(data.to(dev)), target.to(dev))
            loss.backward()
            optimizer.step()
            log.append(loss.item())
    return losses, ref_losses
