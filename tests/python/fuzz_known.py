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
        "overlapping-inplace",
        "An in-place op whose output partly overlaps an input (x[1:].add_(x[:-1]), "
        "x.unsqueeze(0).copy_(x)) runs instead of raising the CPU's 'unsupported operation: "
        "some elements of the input tensor and the written-to tensor refer to a single memory "
        "location'; the result is then computed from partly updated values.",
        (r"^inplace\.[a-z_]+:[^|]*\|.*\balias\b",),
        """
v0 = torch.arange(4.0).to(DEV)
v0[1:].add_(v0[:-1])
return v0
""",
    ),
    Known(
        "sub-with-bool",
        "Subtraction with a bool tensor (or a Python bool) succeeds; the CPU raises "
        "'Subtraction, the `-` operator, with a bool tensor is not supported'.",
        (
            r"^binary\.sub(_alpha)?:(bool,|[^,|]+,(bool|pybool)\b)",
            r"^inplace\.sub_:[^,|]+,(bool|pybool)\b",
            r"\bboolsub\b",
        ),
        """
return torch.ones(2, dtype=torch.int8).to(DEV) - torch.tensor(True).to(DEV)
""",
    ),
    Known(
        "reduction-dtype-float64",
        "cumsum/prod (and other reductions) with dtype=torch.float64 raise 'Expected out tensor "
        "to have dtype double, but got float instead'.",
        (r"^reduce\.[a-z_]+:[^|]*\|.*\bto_float64\b", r"^reduce\.[a-z_]+:float64[^|]*\|.*\bto_"),
        """
return torch.cumsum(torch.ones(3, dtype=torch.int32).to(DEV), 0, dtype=torch.float64)
""",
    ),
    Known(
        "duplicate-reduction-dims",
        "A reduction over a dim list that names a dim twice ((1, -1) on a 2-d tensor) runs "
        "instead of raising 'dim 1 appears multiple times in the list of dims'.",
        (r"\bdupdims\b",),
        """
return torch.amax(torch.ones(2, 2).to(DEV), (1, -1))
""",
    ),
    Known(
        "mixed-dtype-matmul-lerp",
        "dot (1-d matmul), addmm and some mm/bmm shapes with float32 and float64 operands, and "
        "lerp/lerp_ with a float16 self and a bfloat16 end, run instead of raising the CPU's "
        "dtype error.",
        (
            r"^matmul\.(matmul|addmm|mm|bmm):(\w+),(?!\2\b)",
            r"^(inplace|binary)\.lerp_?:(\w+),(?!\2\b)",
        ),
        """
return torch.matmul(torch.ones(2).to(DEV), torch.ones(2, dtype=torch.float64).to(DEV))
""",
    ),
    Known(
        "scalar-first-on-cpu",
        "torch.mul(2, t) (a Python number first) returns a CPU tensor when the op runs through "
        "the CPU fallback (float64, complex64, zero-size t).",
        (
            r"^binary\.[a-z_]+:(float64|complex64),py[a-z]+\|.*\brscalar\b",
            r"^binary\.[^|]*\|.*\bempty\b.*\brscalar\b",
        ),
        """
return torch.mul(2, torch.ones(2, dtype=torch.float64).to(DEV))
""",
    ),
    Known(
        "fallback-0d-float64-promotion",
        "An op that runs through the CPU fallback (any op on a zero-size tensor, floor_divide) "
        "with a float32 tensor and a 0-d float64 tensor gives float64; the CPU keeps float32 (a "
        "0-d tensor does not promote a dimensioned one of the same category).",
        (
            r"\bempty\b.*\b0dpartner\b",
            r"\b0dpartner\b.*\bempty\b",
            r"^binary\.floor_divide:[^|]*\|0dpartner",
            r"^chain\.elementwise:float64\|0d\b.*\bwith_float",
            r"\bemptypartner\b.*\b0d\b",
            r"^chain\.[^|]*\|.*\bempty\b.*\bwith_float64\b",
        ),
        """
return torch.ones(0, 3).to(DEV) + torch.tensor(0.5, dtype=torch.float64).to(DEV)
""",
    ),
    Known(
        "half-op-with-scalar",
        "A bfloat16/float16 op with an operand of another type (a Python number, a 0-d float32 "
        "tensor, an integer tensor) computes with the operand's full value; the CPU first casts "
        "it to the result type (8 + (-3.3311) in bfloat16: CPU 4.6875, neuron 4.65625; float16 "
        "1.1865 + (-1.181): CPU 0.005859, neuron 0.005524; an int32 -2^31 is -inf in float16 on "
        "the CPU). Often within tolerance, until cancellation or a later op magnifies it.",
        (
            r"^(binary|inplace)\.[a-z_]+:(bfloat16|float16),py(float|int)",
            r"^(binary|inplace)\.[a-z_]+:(bfloat16|float16),(?!\2\b)(bool|u?int\d+|float\d+|bfloat16)",
            r"^(binary|inplace)\.[a-z_]+:(u?int\d+|bool|float32|float64),(bfloat16|float16)",
            r"^binary\.[a-z_]+:(bfloat16|float16),float(32|64)\|0dpartner",
            r"^binary\.[a-z_]+:float(32|64),(bfloat16|float16)[^|]*\|0d\b",
            r"\bmixedhalf\b",
        ),
        """
v0 = torch.tensor([8.0], dtype=torch.bfloat16).to(DEV) + torch.tensor(-3.3311).to(DEV)
return (v0 - 4.65625) * 1000
""",
    ),
    Known(
        "complex64-with-float64-promotion",
        "complex64 (or a Python complex) combined with float64 gives complex64; the CPU gives "
        "complex128.",
        (
            r"(complex64,float64|float64,complex64)",
            r"^chain\.elementwise:float64\|.*\bwith_complex64\b",
            r"^chain\.[^|]*\|.*\bwith_complex64\b.*\bwith_float64\b",
            r"^chain\.[^|]*\|.*\bwith_float64\b.*\bwith_complex64\b",
            r"^(binary|inplace)\.[a-z_]+:float64,pycomplex",
        ),
        """
v0 = torch.tensor([1 + 1j], dtype=torch.complex64).to(DEV)
return torch.where(v0 != 0, v0, torch.tensor([2.0], dtype=torch.float64).to(DEV))
""",
    ),
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
        "index-fill-internal-overlap",
        "In-place ops on an expanded tensor: index_fill_/index_put_/masked_fill_ on an expanded tensor (elements sharing memory) raises 'unsupported "
        "operation: more than one element of the written-to tensor refers to a single memory "
        "location'; the CPU writes.",
        (r"^inplace\.[a-z_]+:[^|]*\|.*\binternaloverlap\b",),
        """
v0 = torch.zeros(1, 2).to(DEV).expand(3, 2)
v0.index_fill_(0, torch.tensor([0], device=DEV), 1.0)
return v0
""",
    ),
    Known(
        "deferred-validation-errors",
        "Some errors the CPU raises at the call (an in-place op on an expanded tensor: 'more "
        "than one element of the written-to tensor refers to a single memory location') are "
        "raised by the queued op, at the next synchronization: with several threads on one "
        "device, in whichever thread synchronizes first.",
        (),
        """
v0 = torch.zeros(1).to(DEV).expand(3)
try:
    v0.relu_()
except RuntimeError:
    return "raised at the call"
return "not raised at the call"
""",
        threads_only=r"queued op|cpu raised",
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
        "elementwise-output-layout",
        "Elementwise ops (and cat) on a permuted or channels_last input return a contiguous "
        "tensor; the CPU's output takes the input's layout (stride order). Visible through "
        "as_strided on the result, .stride(), is_contiguous(memory_format=...), and in aliasing: "
        "reshape/flatten/contiguous() of the result is a view on neuron and a copy on the CPU.",
        (
            r"^view\.(as_strided|view|reshape|flatten):[^|]*\|.*\bnoncontig\b",
            r"^unary\.contiguous:[^|]*\|.*\bnoncontig\b",
        ),
        """
return torch.neg(torch.ones(2, 3, 4).to(DEV).permute(2, 0, 1)).stride()
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
        "integer-scalar-range",
        "An integer tensor's in-place op with a scalar its type cannot hold (uint8 addcmul_ "
        "with value=-0.5) runs; the CPU raises 'value cannot be converted to type uint8_t "
        "without overflow'.",
        (r"^inplace\.addcmul_:(bool|uint8|int8|int16|int32|int64),",),
        """
v0 = torch.ones(3, dtype=torch.uint8).to(DEV)
return v0.addcmul_(v0, v0, value=-0.5)
""",
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
