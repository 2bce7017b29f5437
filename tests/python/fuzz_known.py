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
    Known(
        "integer-division-by-zero",
        "Integer floor_divide/remainder by zero gives the executor's value instead of raising "
        "ZeroDivisionError, as on CUDA: seeing the zero needs the divisor on the host "
        "(docs/eager.md). The fuzzer compares the program up to that statement.",
        (),
        "",
    ),
    Known(
        "gelu-extremes",
        "gelu at the float32 extremes follows CUDA's formula, x * 0.5 * (1 + erf(x / sqrt 2)): "
        "gelu(inf) is inf and gelu(3e38) is 3e38 (as on CUDA), where the CPU's vector kernel "
        "gives nan and inf (docs/eager.md, Numerics).",
        (r"^unary\.gelu:",),
        "",
    ),
)

# Empty: every bug found so far is fixed. The last one, wrong values with AEE and several
# threads, was a composed executable found under the address of an op that had died (a thread
# that lost a compile race dropped its copy, and a new op took the address).
KNOWN_FAILURES: tuple[Known, ...] = ()
