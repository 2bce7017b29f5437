"""The CPU as the reference for `neuron`: one call run on both devices, outcomes compared
(dtype, shape and values, or exception type and message); and the table of mixed-dtype
binary-op calls (half types with integers, 0-d tensors and Python numbers) that
test_cpu_semantics.py runs with Adaptive Eager Execution off and, in its own process, on."""

from __future__ import annotations

import warnings

import torch


def outcome(fn, device):
    """("ok", dtype, shape, values on the CPU) or ("err", exception type, first message line)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(device)
            if isinstance(r, (list, tuple)):
                r = torch.stack([t.to("cpu", torch.float64) for t in r]) if r else torch.zeros(0)
            return ("ok", r.dtype, tuple(r.shape), r.cpu())
    except Exception as e:  # noqa: BLE001 - the exception is the outcome
        return ("err", type(e), str(e).splitlines()[0] if str(e) else "")


def same_values(a: torch.Tensor, b: torch.Tensor, float32_precision: bool) -> bool:
    if float32_precision and a.dtype in (torch.float64, torch.complex128):
        narrow = torch.float32 if a.dtype == torch.float64 else torch.complex64
        a, b = a.to(narrow), b.to(narrow)
    return torch.equal(a, b) or bool(
        (a.is_floating_point() or a.is_complex())
        and torch.equal(torch.nan_to_num(a, 7.0, 8.0, 9.0), torch.nan_to_num(b, 7.0, 8.0, 9.0))
        and torch.equal(a.isnan(), b.isnan())
    )


def mismatch(fn, float32_precision=False, messages=True) -> str | None:
    """None when `neuron` gives the CPU's outcome; otherwise both outcomes, for the report."""
    cpu, dev = outcome(fn, "cpu"), outcome(fn, "neuron")
    if cpu[0] == dev[0] == "ok":
        if cpu[1:3] == dev[1:3] and same_values(cpu[3], dev[3], float32_precision):
            return None
    elif cpu[0] == dev[0] == "err":
        if cpu[1] is dev[1] and (not messages or cpu[2] == dev[2]):
            return None
    return f"cpu: {cpu[:3]} {cpu[3].tolist() if cpu[0] == 'ok' else ''}\nneuron: {dev[:3]} {dev[3].tolist() if dev[0] == 'ok' else ''}"


def check(fn, **kw):
    m = mismatch(fn, **kw)
    assert m is None, m


# Values that round when converted to a half type: 257 is 256 in bfloat16, 2049 is 2048 in
# float16; 1.0078125 * 257 is 259, which bfloat16 rounds to 260.
_HALF = {
    torch.bfloat16: ([1.0078125, -1.0, 2.0, 3.5], [257, 257, 3, 2], 257.3),
    torch.float16: ([1.0009765625, -1.0, 2.0, 3.5], [2049, 2049, 3, 2], 2049.3),
}
_OTHERS = {
    "int64 tensor": lambda vals, d, _: torch.tensor(vals, device=d),
    "int64 [1]": lambda vals, d, _: torch.tensor(vals[:1], device=d),
    "int64 0-d": lambda vals, d, _: torch.tensor(vals[0], device=d),
    "int64 0-d cpu": lambda vals, d, _: torch.tensor(vals[0]),
    "float32 0-d": lambda vals, d, f: torch.tensor(f, device=d),
    "float32 [1]": lambda vals, d, f: torch.tensor([f], device=d),
    "python float": lambda vals, d, f: f,
    "python int": lambda vals, d, _: vals[0],
}
_BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "pow": torch.pow,
    "maximum": lambda a, b: torch.maximum(
        a, b if isinstance(b, torch.Tensor) else torch.tensor(b, device=a.device)
    ),
    "eq": torch.eq,
    "lt": torch.lt,
    "clamp_min": torch.clamp_min,
    "where": lambda a, b: torch.where(a > 0, a, b),
    "addcmul": lambda a, b: torch.addcmul(
        a, a, b if isinstance(b, torch.Tensor) else torch.tensor(b, device=a.device), value=0.3
    ),
    "addcdiv": lambda a, b: torch.addcdiv(
        a, a, b if isinstance(b, torch.Tensor) else torch.tensor(b, device=a.device), value=0.3
    ),
    "mul_": lambda a, b: a.mul_(b),
    "div_": lambda a, b: a.div_(b),
    "rsub (fallback)": lambda a, b: torch.rsub(a, b),
}


def mixed_cases():
    cases = {}
    for half, (hv, iv, fv) in _HALF.items():
        for oname, other in _OTHERS.items():
            for bname, op in _BINARY.items():

                def fn(d, half=half, hv=hv, iv=iv, fv=fv, other=other, op=op):
                    return op(torch.tensor(hv, dtype=half, device=d), other(iv, d, fv))

                cases[f"{bname}({half}, {oname})"] = fn
                if bname in ("add", "mul", "div", "pow", "maximum"):

                    def rev(d, half=half, hv=hv, iv=iv, fv=fv, other=other, op=op):
                        o = other(iv, d, fv)
                        if not isinstance(o, torch.Tensor):
                            o = torch.tensor(o, device=d)
                        return op(o, torch.tensor(hv, dtype=half, device=d))

                    cases[f"{bname}({oname}, {half})"] = rev
    for bname in ("add", "mul", "div", "maximum", "lt"):
        op = _BINARY[bname]
        cases[f"{bname}(bfloat16, float16)"] = lambda d, op=op: op(
            torch.tensor([1.0078125, 3.0], dtype=torch.bfloat16, device=d),
            torch.tensor([2049.0, 0.1], dtype=torch.float16, device=d),
        )
        cases[f"{bname}(uint8, int8)"] = lambda d, op=op: op(
            torch.tensor([200, 3], dtype=torch.uint8, device=d),
            torch.tensor([-100, 7], dtype=torch.int8, device=d),
        )
        cases[f"{bname}(int32, python float)"] = lambda d, op=op: op(
            torch.tensor([16777217, 3], dtype=torch.int32, device=d), 0.5
        )
    return cases


MIXED = mixed_cases()


def chained(fn):
    """|fn| with its result multiplied by one: under Adaptive Eager Execution the op then runs
    fused with the multiplication (which changes no value) instead of alone."""

    def run(d):
        r = fn(d)
        return r * 1 if r.is_floating_point() else r

    return run


def mixed_mismatches(chain=False) -> dict[str, str]:
    """The MIXED cases whose outcome on `neuron` is not the CPU's, with both outcomes."""
    out = {}
    for name, fn in MIXED.items():
        m = mismatch(chained(fn) if chain else fn)
        if m is not None:
            out[name] = m
    return out
