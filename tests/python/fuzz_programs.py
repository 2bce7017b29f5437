"""Random op programs for the differential fuzz suite (test_fuzz_differential.py).

A program is a list of one-line Python statements over variables `v0`, `v1`, ...: inputs made
on the CPU from literal values (or a seeded generator for large ones) and moved to `DEV`, then
views, elementwise ops, reductions, in-place ops, indexing, factories. The same text runs with
`DEV = "cpu"` and `DEV = "neuron"`, so a mismatch is reproduced by printing the program.

The generator executes each statement on the CPU as it goes, so that it knows the shapes and
dtypes it builds on. Every statement carries a feature tag (`binary.sub:float32,bool`,
`view.unfold:float32`, ...) that the known-failure list matches to keep a known bug's feature
out of the programs until it is fixed.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re

import torch

DTYPES = (
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
)
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
# Weights of the input dtypes: float32 and the half types are what the device computes in.
DTYPE_WEIGHTS = (2, 2, 1, 1, 2, 3, 3, 3, 6, 2, 2)

# Results larger than this are not kept (programs stay fast); large reductions are their own
# family with their own bound.
MAX_NUMEL = 1 << 16
LARGE_MAX_NUMEL = 10**7


def dname(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclasses.dataclass
class Stmt:
    code: str  # one line of Python
    kind: str  # "input", "assign" or "inplace"
    feature: str  # category.op:dtypes|flags, matched by the known-failure list


def fmt_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def fmt_value(x) -> str:
    if isinstance(x, bool):
        return repr(x)
    if isinstance(x, complex):
        return f"complex({fmt_float(x.real)}, {fmt_float(x.imag)})"
    if isinstance(x, float):
        return fmt_float(x)
    return repr(x)


def fmt_nested(values) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(fmt_nested(v) for v in values) + "]"
    return fmt_value(values)


def new_env(device: str) -> dict:
    return {"torch": torch, "DEV": device, "inf": math.inf, "nan": math.nan}


VAR = re.compile(r"\bv\d+\b")


class ProgramGenerator:
    """Builds one program from a seed, executing it on the CPU as it grows."""

    def __init__(self, seed: int, excluded=(), max_stmts: int = 8, large: bool = False):
        self.rng = random.Random(seed)
        self.seed = seed
        self.excluded = [re.compile(p) for p in excluded]
        self.max_stmts = max_stmts
        self.large = large
        self.stmts: list[Stmt] = []
        self.env = new_env("cpu")
        self.count = 0
        self.skipped_known = 0

    # -- bookkeeping ---------------------------------------------------------------------------

    def name(self) -> str:
        name = f"v{self.count}"
        self.count += 1
        return name

    def tensors(self, pred=None) -> list[str]:
        names = []
        for key, value in self.env.items():
            if VAR.fullmatch(key) and isinstance(value, torch.Tensor):
                if pred is None or pred(value):
                    names.append(key)
        return names

    def emit(self, stmt: Stmt, allow_error: float = 0.3) -> str:
        """Runs |stmt| on the CPU. Returns "ok", "error" (kept: the program ends with it)
        or "dropped" (not kept: the CPU state is rebuilt without it)."""
        if any(p.search(stmt.feature) for p in self.excluded):
            self.skipped_known += 1
            return "dropped"
        try:
            exec(stmt.code, self.env)
        except Exception:
            if self.rng.random() < allow_error and stmt.kind != "input":
                self.stmts.append(stmt)
                return "error"
            self._rebuild()
            return "dropped"
        for key, value in list(self.env.items()):
            if VAR.fullmatch(key) and isinstance(value, torch.Tensor):
                limit = LARGE_MAX_NUMEL if self.large else MAX_NUMEL
                if value.numel() > limit:
                    self._rebuild()
                    return "dropped"
        self.stmts.append(stmt)
        return "ok"

    def _rebuild(self) -> None:
        self.env = new_env("cpu")
        for stmt in self.stmts:
            exec(stmt.code, self.env)

    # -- values --------------------------------------------------------------------------------

    def pick_dtype(self) -> torch.dtype:
        return self.rng.choices(DTYPES, weights=DTYPE_WEIGHTS)[0]

    def pick_shape(self, max_dims: int = 4, max_size: int = 6) -> tuple[int, ...]:
        r = self.rng
        ndim = r.choices((0, 1, 2, 3, 4), weights=(1, 3, 4, 3, 1))[0]
        ndim = min(ndim, max_dims)
        shape = []
        for _ in range(ndim):
            shape.append(r.choices((0, 1, 2, 3, 4, 5, max_size), weights=(1, 3, 3, 3, 2, 2, 1))[0])
        return tuple(shape)

    def scalar_value(self, dtype: torch.dtype, special: float = 0.15):
        r = self.rng
        if dtype == torch.bool:
            return r.random() < 0.5
        if dtype in INTS:
            info = torch.iinfo(dtype)
            if r.random() < special:
                return r.choice(
                    (info.min, info.max, info.max - 1, info.min + 1, 0, -1 if info.min < 0 else 1)
                )
            lo = max(info.min, -20)
            return r.randint(lo, min(info.max, 20))
        if dtype.is_complex:
            return complex(
                self.scalar_value(torch.float32, special), self.scalar_value(torch.float32, special)
            )
        if r.random() < special:
            # Large, but not so close to the type's limit that the order of an op's internal
            # steps decides between a finite result and inf (float64 is computed as float32).
            big = {
                torch.float16: 6e4,
                torch.bfloat16: 1e30,
                torch.float32: 1e30,
                torch.float64: 1e30,
            }[dtype]
            return r.choice((math.nan, math.inf, -math.inf, 0.0, -0.0, big, -big, 1e-30, 0.5))
        if r.random() < 0.4:
            return float(r.randint(-8, 8))
        return round(r.gauss(0, 2), 3)

    def input_stmt(self, shape, dtype, name=None) -> Stmt:
        """An input made on the CPU and moved to DEV; sometimes moved as a permuted tensor."""
        name = name or self.name()
        numel = math.prod(shape)
        dt = f"torch.{dname(dtype)}"
        r = self.rng
        if numel == 0:
            expr = f"torch.zeros({tuple(shape)!r}, dtype={dt})"
        elif numel <= 64:
            values = torch.zeros(numel).tolist()
            values = [self.scalar_value(dtype) for _ in values]
            # Round to the dtype first, so the literal is the tensor's exact value.
            t = torch.tensor(values, dtype=dtype) if dtype != torch.bool else torch.tensor(values)
            nested = t.reshape(shape).tolist()
            expr = f"torch.tensor({fmt_nested(nested)}, dtype={dt})"
        else:
            gen = f"generator=torch.Generator().manual_seed({r.randint(0, 10**6)})"
            if dtype == torch.bool:
                expr = f"torch.randint(0, 2, {tuple(shape)!r}, {gen}).bool()"
            elif dtype in INTS:
                info = torch.iinfo(dtype)
                lo, hi = (info.min, info.max) if r.random() < 0.2 else (max(info.min, -50), 50)
                expr = f"torch.randint({lo}, {hi}, {tuple(shape)!r}, {gen}, dtype={dt})"
            else:
                scale = r.choice((1.0, 100.0, 1e-3))
                expr = f"(torch.randn({tuple(shape)!r}, {gen}, dtype={'torch.complex64' if dtype.is_complex else 'torch.float32'}) * {scale}).to({dt})"
        flags = "0d" if len(shape) == 0 else ("empty" if numel == 0 else "")
        if len(shape) >= 2 and r.random() < 0.25:
            expr += ".mT"  # moved to the device with transposed strides
            flags += "|permuted"
        return Stmt(f"{name} = {expr}.to(DEV)", "input", f"input:{dname(dtype)}|{flags}")

    def new_input(self, shape=None, dtype=None) -> str | None:
        shape = self.pick_shape() if shape is None else shape
        dtype = self.pick_dtype() if dtype is None else dtype
        stmt = self.input_stmt(shape, dtype)
        name = stmt.code.split(" ", 1)[0]
        return name if self.emit(stmt) == "ok" else None

    def broadcast_partner_shape(self, shape) -> tuple[int, ...]:
        r = self.rng
        out = list(shape[r.randint(0, len(shape)) :]) if shape else []
        out = [1 if r.random() < 0.3 else s for s in out]
        if r.random() < 0.15:
            out = [r.choice((1, 2))] + out
        return tuple(out)

    def value(self, name: str) -> torch.Tensor:
        return self.env[name]

    # -- the program ---------------------------------------------------------------------------

    def generate(self) -> list[Stmt]:
        from fuzz_ops import FAMILIES  # the op catalogue

        for _ in range(self.rng.randint(1, 2)):
            self.new_input()
        families = [f for f in FAMILIES if f.large == self.large]
        weights = [f.weight for f in families]
        tries = 0
        while len([s for s in self.stmts if s.kind != "input"]) < self.max_stmts and tries < 60:
            tries += 1
            if not self.tensors():
                self.new_input()
                continue
            family = self.rng.choices(families, weights=weights)[0]
            stmt = family.make(self)
            if stmt is None:
                continue
            if self.emit(stmt) == "error":
                break
        return self.stmts
