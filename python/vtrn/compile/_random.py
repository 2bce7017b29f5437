"""Random ops of a compiled graph drawn inside its module.

Eager mode runs native_dropout, rand, randn and bernoulli as the device's random kernels: each
reserves a Philox range (seed, offset) from the device generator when it is issued and fills
its output from it, which would end the capture's group. The rewrite below replaces each such
call by a call that reserves the same range at the same point of the program and passes it to
a lowered op (vtrn::philox_*) that draws the same numbers inside the module, so a graph with
dropout is one executable and draws what eager mode draws under the same torch.manual_seed.
"""

import torch

aten = torch.ops.aten

# The dtypes the lowered ops draw in (others keep the runtime kernels).
_FLOATS = (torch.float32, torch.bfloat16, torch.float16)


def _reserve(device, numel):
    from vtrn import _C

    index = device.index if device.index is not None else -1
    return _C._reserve_philox(index, numel)


def _dropout(x, p):
    seed, offset = _reserve(x.device, x.numel())
    return torch.ops.vtrn.philox_dropout.default(x, p, seed, offset)


def _uniform(shape, dtype, device, low, high):
    like = torch.empty(shape, dtype=dtype, device=device)
    seed, offset = _reserve(like.device, like.numel())
    return torch.ops.vtrn.philox_uniform.default(like, low, high, seed, offset)


def _normal(shape, dtype, device, mean, std):
    like = torch.empty(shape, dtype=dtype, device=device)
    seed, offset = _reserve(like.device, like.numel())
    return torch.ops.vtrn.philox_normal.default(like, mean, std, seed, offset)


def _bernoulli(shape, dtype, device, p):
    like = torch.empty(shape, dtype=dtype, device=device)
    seed, offset = _reserve(like.device, like.numel())
    return torch.ops.vtrn.philox_bernoulli.default(like, p, seed, offset)


def _drawn_on_device(node) -> bool:
    """Whether |node|'s result is a non-empty float tensor on neuron drawn from the default
    generator."""
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        val = val[0]
    return (
        isinstance(val, torch.Tensor)
        and val.device.type == "neuron"
        and val.dtype in _FLOATS
        and val.numel() > 0
        and node.kwargs.get("generator") is None
    )


def _type_of(node):
    val = node.meta["val"]
    return tuple(val.shape), val.dtype, val.device


def rewrite_random_ops(gm):
    """native_dropout (training, 0 < p <= 1), rand(_like), randn(_like) and bernoulli.p on
    neuron -> the lowered vtrn::philox_* ops, each with a range reserved in program order."""
    changed = False
    for node in gm.graph.nodes:
        if node.op != "call_function" or not _drawn_on_device(node):
            continue
        target = node.target
        if target is aten.native_dropout.default:
            p = node.args[1] if len(node.args) > 1 else node.kwargs.get("p")
            train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train")
            if train is False or not isinstance(p, (int, float)) or not 0 < p <= 1:
                continue
            node.target = _dropout
            node.args = (node.args[0], float(p))
        elif target in (aten.rand.default, aten.rand_like.default):
            node.target = _uniform
            node.args = (*_type_of(node), 0.0, 1.0)
        elif target in (aten.randn.default, aten.randn_like.default):
            node.target = _normal
            node.args = (*_type_of(node), 0.0, 1.0)
        elif target is aten.bernoulli.p:
            p = node.args[1] if len(node.args) > 1 else node.kwargs.get("p", 0.5)
            if not isinstance(p, (int, float)):
                continue
            node.target = _bernoulli
            node.args = (*_type_of(node), float(p))
        else:
            continue
        node.kwargs = {}
        changed = True
    if changed:
        gm.recompile()
    return gm
