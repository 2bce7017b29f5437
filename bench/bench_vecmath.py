"""Vector math for the executor's elementwise loops: glibc's libm, SLEEF and Google Highway.

Compiles bench/vecmath_compare.cc for this machine (a throwaway build, -march=native) and, in
one process on the same inputs, for exp, log, tanh, erf, sigmoid and the exact GELU:

  * the time per element of each library over N float32 values (best of REPS runs, one thread),
    and of torch's own CPU kernel (torch.set_num_threads(1)) for scale;
  * the share of float32 results bit-identical to torch's CPU result on the same values
    (normal(0, 3); |x| for log), and the largest difference in units of the last place;
  * the share of all 65,536 bfloat16 inputs whose result, computed in float32 and rounded
    once to bfloat16 (as vtrn computes reduced types), equals torch's bfloat16 result.

Highway's contrib math has no erf (so no exact GELU either); those cells print "-". Highway
needs Debian's libhwy-dev; without it its columns print "-" too. SLEEF needs libsleef-dev
(scripts/setup.sh installs it: the executor links it).

    python bench/bench_vecmath.py
    python bench/bench_vecmath.py --n 262144 --reps 5
"""

import argparse
import ctypes
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")  # torch's CPU kernels only
import torch  # noqa: E402

SOURCE = pathlib.Path(__file__).resolve().with_name("vecmath_compare.cc")
OPS = ["exp", "log", "tanh", "erf", "sigmoid", "gelu"]
IMPLS = ["libm", "sleef", "hwy"]
TORCH_OPS = {
    "exp": torch.exp,
    "log": torch.log,
    "tanh": torch.tanh,
    "erf": torch.erf,
    "sigmoid": torch.sigmoid,
    "gelu": torch.nn.functional.gelu,
}


def build(tmp: pathlib.Path) -> ctypes.CDLL:
    out = tmp / "libvecmath_compare.so"
    cmd = ["g++", "-O2", "-march=native", "-std=c++20", "-shared", "-fPIC", str(SOURCE)]
    if pathlib.Path("/usr/include/hwy/contrib/math/math-inl.h").exists():
        # only the target this machine's baseline picks: a newer CPU than this Highway knows
        # would otherwise trip its dynamic-dispatch check
        cmd += ["-DVTRN_BENCH_HWY", "-DHWY_COMPILE_ONLY_STATIC=1"]
    cmd += ["-o", str(out), "-lsleef", "-lm"]
    subprocess.run(cmd, check=True)
    lib = ctypes.CDLL(str(out))
    lib.vm_run.argtypes = [
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int64,
    ]
    lib.vm_time.argtypes = lib.vm_run.argtypes + [ctypes.c_int]
    lib.vm_time.restype = ctypes.c_double
    lib.vm_hwy_target.restype = ctypes.c_char_p
    return lib


def run(lib, impl: int, op: int, x: np.ndarray):
    y = np.empty_like(x)
    ok = lib.vm_run(impl, op, x.ctypes.data, y.ctypes.data, x.size)
    return y if ok else None


def ulp_diff(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in float32 steps between finite results (NaN equal to NaN)."""

    def ordered(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    both_nan = np.isnan(a) & np.isnan(b)
    d = np.abs(ordered(a) - ordered(b))
    d[both_nan] = 0
    return int(d.max()) if d.size else 0


def identical(a: np.ndarray, b: np.ndarray) -> float:
    same = (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))
    return float(same.mean())


def torch_ns(fn, x: torch.Tensor, reps: int) -> float:
    import time

    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn(x)
        best = min(best, time.perf_counter_ns() - t0)
    return best / x.numel()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 20, help="float32 values per run")
    ap.add_argument("--reps", type=int, default=7, help="timed runs per cell (best is kept)")
    args = ap.parse_args()
    n = (args.n + 15) // 16 * 16
    torch.set_num_threads(1)

    with tempfile.TemporaryDirectory(prefix="vtrn-vecmath-") as tmp:
        lib = build(pathlib.Path(tmp))
        rng = np.random.default_rng(0)
        base = (rng.standard_normal(n) * 3).astype(np.float32)
        bf16_all = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
        bf16_all = bf16_all.view(torch.bfloat16)
        bf16_in = bf16_all.float().numpy().copy()

        load = os.getloadavg()[0]
        print(
            f"N={n} float32, one thread, best of {args.reps}; load average {load:.1f} "
            f"on {os.cpu_count()} CPUs; torch {torch.__version__} "
            f"({torch.backends.cpu.get_cpu_capability()}); Highway target "
            f"{(lib.vm_hwy_target() or b'-').decode()}"
        )
        print(
            f"{'op':8} {'ns/elem libm':>12} {'sleef':>7} {'hwy':>7} {'torch':>7} "
            f"{'libm/sleef':>10} {'libm/hwy':>8}   f32 = torch (max ulp)"
            f"{'':18} bf16 = torch (all 65536)"
        )
        for k, name in enumerate(OPS):
            x = np.abs(base) if name == "log" else base
            ref = TORCH_OPS[name](torch.from_numpy(x)).numpy()
            ref_bf = TORCH_OPS[name](bf16_all).float().numpy()
            times, f32, bf = [], [], []
            out = np.empty_like(x)  # held here: ctypes keeps no reference to it
            for i in range(len(IMPLS)):
                t = lib.vm_time(i, k, x.ctypes.data, out.ctypes.data, n, args.reps)
                times.append(t if t >= 0 else None)
                y = run(lib, i, k, x)
                f32.append(None if y is None else f"{identical(y, ref):.4f} ({ulp_diff(y, ref)})")
                # round the float32 results once to bfloat16, as the executor stores them
                yb = run(lib, i, k, np.ascontiguousarray(bf16_in))
                if yb is None:
                    bf.append(None)
                else:
                    yb = torch.from_numpy(yb).to(torch.bfloat16).float().numpy()
                    bf.append(f"{identical(yb, ref_bf):.5f}")
            tt = torch_ns(TORCH_OPS[name], torch.from_numpy(x), args.reps)

            def cell(v, fmt):
                return "-" if v is None else format(v, fmt)

            ratio = [None if t is None else times[0] / t for t in times]
            print(
                f"{name:8} {cell(times[0], '12.2f')} {cell(times[1], '7.2f')} "
                f"{cell(times[2], '7.2f'):>7} {tt:7.2f} {cell(ratio[1], '10.1f')} "
                f"{cell(ratio[2], '8.1f'):>8}   "
                + " ".join(f"{IMPLS[i]}={f32[i] or '-'}" for i in range(3))
                + "   "
                + " ".join(f"{IMPLS[i]}={bf[i] or '-'}" for i in range(3))
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
