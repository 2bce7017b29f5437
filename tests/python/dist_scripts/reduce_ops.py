"""Run under `vtrn run --nproc-per-node 4`: every ReduceOp on every dtype NCCL reduces, through
all_reduce, reduce, reduce_scatter_tensor and reduce_scatter, against the same reduction
computed on the CPU from every rank's input; the ops NCCL refuses raise its errors; each
reduction's modeled time. Rank 0 prints one line per checked case, then "rank R OK"."""

import functools
import sys
import warnings

import torch
import torch.distributed as dist

import vtrn.distributed

warnings.filterwarnings("ignore", category=FutureWarning)  # reduce_scatter_tensor's rename
dist.init_process_group("neuron")
r, w = dist.get_rank(), dist.get_world_size()
dev = torch.device("neuron", torch.neuron.current_device())
Op = dist.ReduceOp
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
N = 12  # divisible by the world size (reduce-scatter) and the 3-rank group


def inputs(dtype, ranks, op):
    """Every rank's input, made from its rank alone: small integers keep sums, products and
    the scaled sums exact in every dtype, so the order Gloo reduces in cannot matter."""
    out = []
    for k in ranks:
        g = torch.Generator().manual_seed(1000 * k + 7)
        if dtype == torch.bool:
            out.append(torch.randint(0, 2, (N,), generator=g).bool())
        elif op in (Op.BAND, Op.BOR, Op.BXOR):
            out.append(torch.randint(0, 100, (N,), generator=g).to(dtype))
        elif dtype == torch.uint8:
            out.append(torch.randint(0, 7, (N,), generator=g).to(dtype))
        else:
            out.append(torch.randint(-3, 4, (N,), generator=g).to(dtype))
    return out


def cpu_reduce(xs, op, factor=None):
    """The reduction on the CPU, in the dtype (integers wrap as they do on the device)."""
    dtype = xs[0].dtype
    if op == Op.SUM:
        if dtype == torch.bool:
            return functools.reduce(torch.logical_or, xs)
        return functools.reduce(torch.add, xs)
    if op == Op.PRODUCT:
        if dtype == torch.bool:
            return functools.reduce(torch.logical_and, xs)
        return functools.reduce(torch.mul, xs)
    if op == Op.MIN:
        return functools.reduce(torch.minimum, xs)
    if op == Op.MAX:
        return functools.reduce(torch.maximum, xs)
    if op == Op.AVG:
        total = functools.reduce(torch.add, xs)
        if dtype.is_floating_point:
            return total / len(xs)
        return torch.div(total, len(xs), rounding_mode="trunc")
    if op == Op.PREMUL_SUM:
        return functools.reduce(torch.add, [x * factor for x in xs])
    return functools.reduce(
        {Op.BAND: torch.bitwise_and, Op.BOR: torch.bitwise_or, Op.BXOR: torch.bitwise_xor}[op], xs
    )


def check(name, got, want):
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    assert torch.equal(got.cpu(), want), (name, got.cpu().tolist(), want.tolist())
    if r == 0:
        print(f"ok {name}", flush=True)


def supported(op, dtype):
    if op == Op.AVG:
        return dtype != torch.bool
    if op == Op.PREMUL_SUM:
        return dtype in FLOATS
    if op in (Op.BAND, Op.BOR, Op.BXOR):
        return dtype not in FLOATS
    return True


def ops_of(dtype):
    ops = [Op.SUM, Op.PRODUCT, Op.MIN, Op.MAX, Op.AVG, Op.PREMUL_SUM, Op.BAND, Op.BOR, Op.BXOR]
    return [op for op in ops if supported(op, dtype)]


def make_op(op, factor):
    return dist._make_nccl_premul_sum(factor) if op == Op.PREMUL_SUM else op


ranks = list(range(w))
triple = dist.new_group([0, 1, 2])  # AVG divides by 3: a quotient the dtype must round
for dtype in [*FLOATS, *INTS, torch.bool]:
    for op in ops_of(dtype):
        factor = 0.25
        label = f"{str(op).split('.')[-1]} {str(dtype).split('.')[-1]}"
        xs = inputs(dtype, ranks, op)
        want = cpu_reduce(xs, op, factor)

        t = xs[r].to(dev)
        dist.all_reduce(t, op=make_op(op, factor))
        check(f"all_reduce {label}", t, want)

        t = xs[r].to(dev)
        dist.reduce(t, dst=1, op=make_op(op, factor))
        check(f"reduce {label}", t, want if r == 1 else xs[r])  # others keep their input

        source = xs[r].to(dev)
        shard = torch.empty(N // w, dtype=dtype, device=dev)
        dist.reduce_scatter_tensor(shard, source, op=make_op(op, factor))
        check(f"reduce_scatter_tensor {label}", shard, want.chunk(w)[r])
        check(f"reduce_scatter_tensor input {label}", source, xs[r])  # the input is unchanged

        pieces = [p.to(dev) for p in xs[r].chunk(w)]
        shard = torch.empty(N // w, dtype=dtype, device=dev)
        dist.reduce_scatter(shard, pieces, op=make_op(op, factor))
        check(f"reduce_scatter {label}", shard, want.chunk(w)[r])

        if r < 3 and op == Op.AVG:
            three = inputs(dtype, [0, 1, 2], op)
            t = three[r].to(dev)
            dist.all_reduce(t, op=op, group=triple)
            check(f"all_reduce over 3 {label}", t, cpu_reduce(three, op))

# A PREMUL_SUM factor given as a one-element tensor, as FSDP2 may.
xs = inputs(torch.float32, ranks, Op.SUM)
t = xs[r].to(dev)
dist.all_reduce(t, op=dist._make_nccl_premul_sum(torch.tensor([0.5], device=dev)))
check("all_reduce PREMUL_SUM tensor factor", t, cpu_reduce(xs, Op.PREMUL_SUM, 0.5))

# What NCCL refuses, refused with its message, leaving the tensor as it was: a dtype the op
# cannot take is a TypeError, as NCCL raises it.
refusals = [
    (Op.AVG, torch.bool, "Cannot use ReduceOp.AVG with boolean inputs"),
    (Op.PREMUL_SUM, torch.int32, "PreMulSum Data type must be half, float"),
    (Op.BAND, torch.float32, "Cannot use ReduceOp.BAND with Float tensors"),
    (Op.BXOR, torch.bfloat16, "Cannot use ReduceOp.BXOR with BFloat16 tensors"),
]
for op, dtype, text in refusals:
    t = inputs(dtype, [r], Op.SUM)[0].to(dev)
    before = t.cpu().clone()
    try:
        dist.all_reduce(t, op=make_op(op, 0.5))
    except TypeError as err:
        assert text in str(err), str(err)
    else:
        raise AssertionError(f"{op} on {dtype} was not refused")
    assert torch.equal(t.cpu(), before)
    if r == 0:
        print(f"refused {str(op).split('.')[-1]} {str(dtype).split('.')[-1]}", flush=True)

# Modeled time: MIN and MAX reduce in the collective as SUM does; PREMUL_SUM adds the scaling
# pass over the input, AVG the division of the result.
big = torch.ones(1 << 20, device=dev)


def modeled(op):
    before = vtrn.distributed.modeled_collective_seconds()
    dist.all_reduce(big, op=op)
    return vtrn.distributed.modeled_collective_seconds() - before


sum_s = modeled(Op.SUM)
assert sum_s > 0
assert modeled(Op.MAX) == sum_s and modeled(Op.MIN) == sum_s
premul_s = modeled(dist._make_nccl_premul_sum(1.0))
avg_s = modeled(Op.AVG)
assert premul_s > sum_s and avg_s > sum_s, (sum_s, premul_s, avg_s)
if r == 0:
    print(f"modeled SUM {sum_s:.3e} PREMUL_SUM {premul_s:.3e} AVG {avg_s:.3e}", flush=True)
dist.barrier()
sys.stdout.write(f"rank {r} OK\n")  # one write(): every rank prints it
sys.stdout.flush()
dist.destroy_process_group()
