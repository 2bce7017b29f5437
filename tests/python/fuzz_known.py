"""Known bugs the differential fuzzer keeps out of its programs until they are fixed.

Each entry names a feature class (regexes on the generator's statement tags, see
fuzz_ops.py), says what is wrong, and gives a minimal reproducer: the body of a `run(DEV)`
whose result (or exception type) on `neuron` differs from the CPU's. test_fuzz_differential.py
checks that every reproducer still fails: whoever fixes one of these bugs removes its entry,
and the fuzzer generates that feature again.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Known:
    id: str
    what: str
    features: tuple[str, ...]  # regexes on statement tags
    reproducer: str  # the body of run(DEV); its value is compared with the CPU's
    # For a bug that only shows with several threads: a regex on the mismatch's description
    # that attributes a finding that does not reproduce in one thread to this entry.
    threads_only: str | None = None
    aee_only: bool = False  # threads_only applies with TORCH_NEURONX_ENABLE_CONCATENATION=1


# Documented, deliberate differences from the CPU: never generated, and not bugs.
POLICIES: tuple[Known, ...] = (
    Known(
        "nan-sign",
        "The sign bit of a NaN is unspecified (IEEE 754): copysign(x, nan) and signbit(nan) "
        "follow whichever NaN the arithmetic produced (x86's default NaN is negative).",
        (r"^binary\.copysign:", r"^unary\.signbit:"),
        "",
    ),
    Known(
        "half-alpha-and-rsqrt-rounding",
        "add/sub with alpha and rsqrt in float16/bfloat16: the CPU rounds differently in its "
        "scalar tail loop than in its vector body; vtrn computes the correctly rounded value "
        "(docs/eager.md, Numerics).",
        (r"^binary\.(add|sub)_alpha:(float16|bfloat16),", r"^unary\.rsqrt:(float16|bfloat16)"),
        "",
    ),
)

KNOWN_FAILURES: tuple[Known, ...] = (
    Known(
        "pow-half-as-sqrt",
        "pow(x, 0.5) in float16/bfloat16 behaves as sqrt: pow(-inf, 0.5) gives nan (CPU inf) "
        "and pow(-0.0, 0.5) gives -0.0 (CPU 0.0).",
        (r"^inplace\.pow_:(float16|bfloat16),exp0\.5", r"^binary\.pow:(float16|bfloat16),pyfloat"),
        """
v0 = torch.tensor([-inf, -0.0, 4.0], dtype=torch.float16).to(DEV)
v0.pow_(0.5)
return 1 / v0
""",
    ),
    Known(
        "relu-negative-zero",
        "relu(-0.0) gives +0.0; the CPU keeps -0.0 (1 / relu(x) is then +inf instead of -inf).",
        (
            r"^unary\.relu:(float|bfloat)",
            r"^inplace\.relu_:(float|bfloat)",
            r"^chain\.[^|]*\|.*\brelu\b",
        ),
        """
return 1 / torch.relu(torch.tensor([-0.0]).to(DEV))
""",
    ),
    Known(
        "aee-threads-wrong-values",
        "With TORCH_NEURONX_ENABLE_CONCATENATION=1 and several Python threads on one device, "
        "programs that are right in one thread give wrong values (nan/inf or stale inputs: a "
        "fused chain that reads a tensor a later in-place op of the same thread writes). Not "
        "reproduced by a small deterministic program yet: TORCH_NEURONX_ENABLE_CONCATENATION=1 "
        "python tests/python/fuzz_differential.py --seeds 300000:300100 --threads 4 reports "
        "some (known_in_threads).",
        (),
        "",
        threads_only=r"are not (close|equal)",
        aee_only=True,
    ),
    Known(
        "gelu-extremes",
        "gelu(inf) is inf (CPU nan) and gelu(3e38) is 3e38 (CPU inf: its formula overflows).",
        (r"^unary\.gelu:",),
        """
return torch.nn.functional.gelu(torch.tensor([float("inf"), 3e38]).to(DEV))
""",
    ),
    Known(
        "vector-norm-overflow",
        "The 2-norm squares without scaling: linalg.vector_norm of [2e20] is inf (CPU 2e20).",
        (r"^reduce\.norm:(float32|bfloat16|float16)",),
        """
return torch.linalg.vector_norm(torch.tensor([2e20]).to(DEV))
""",
    ),
)
