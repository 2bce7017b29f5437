"""Modeled device time of fused work, against bytes counted by hand: an Adaptive Eager Execution
group whose intermediates the program keeps is never modeled slower than its ops one by one,
and cat into a wider out= dtype moves the narrow bytes. The Trainium2 figures: 2.9 TB/s of HBM
over 8 physical cores is 362.5 GB/s per core, and each kernel starts with a 1.3 us DMA."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

BW = 2.9e12 / 8
DMA_START = 1.3e-6

CHAIN = textwrap.dedent(
    """
    import json, torch, vtrn
    x = torch.zeros(1024, 1024, dtype=torch.bfloat16).to("neuron")
    torch.neuron.synchronize()
    vtrn.clock(reset=True)
    a = x * 2          # each intermediate is kept, as autograd keeps saved tensors
    b = a + 1
    c = b * x
    torch.neuron.synchronize()
    s = vtrn.clock()["streams"][0]
    print(json.dumps({"dma_us": s["busy_us"]["dma"], "busy_us": s["busy_total_us"]}))
    """
)

CAT = textwrap.dedent(
    """
    import json, torch, vtrn
    parts = [torch.zeros(n, dtype=torch.bfloat16, device="neuron") for n in (1 << 20, 1 << 19)]
    out = torch.empty(3 << 19, dtype=torch.float32, device="neuron")
    torch.neuron.synchronize()
    vtrn.clock(reset=True)
    torch.cat(parts, out=out)
    torch.neuron.synchronize()
    s = vtrn.clock()["streams"][0]
    print(json.dumps({"dma_us": s["busy_us"]["dma"], "busy_us": s["busy_total_us"]}))
    """
)


def run(script, aee=False):
    env = dict(os.environ, VTRN_EXECUTION="shapes")
    env["TORCH_NEURONX_ENABLE_CONCATENATION"] = "1" if aee else "0"
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_group_keeping_its_intermediates_costs_no_more_than_its_ops():
    n = 1024 * 1024
    off = run(CHAIN)
    on = run(CHAIN, aee=True)
    # In both modes each of the three scalar operands (2, 1 and add's alpha) is converted to the
    # loop's type by a one-element kernel of its own: a DMA start each (its bytes are below the
    # tolerance).
    scalars = 3 * DMA_START
    # One by one: a = x*2 reads x and writes a, b = a+1 reads a and writes b, c = b*x reads b
    # and x and writes c: 14 bytes an element, three kernels.
    assert off["busy_us"] == pytest.approx((scalars + 3 * DMA_START + 14 * n / BW) * 1e6, rel=1e-4)
    # As one group: x read once, a, b and c written from the same loop: 8 bytes, one kernel.
    assert on["busy_us"] == pytest.approx((scalars + DMA_START + 8 * n / BW) * 1e6, rel=1e-4)
    assert on["busy_us"] <= off["busy_us"]


def test_cat_into_a_wider_dtype_copies_the_narrow_bytes():
    n = 3 << 19
    r = run(CAT)
    # Concatenate in bfloat16 (2 bytes read, 2 written), then one conversion to float32 (2 read,
    # 4 written); not each input converted to a float32 temporary first (14 bytes).
    assert r["busy_us"] == pytest.approx((2 * DMA_START + 10 * n / BW) * 1e6, rel=1e-6)
