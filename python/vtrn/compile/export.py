"""``torch.export`` programs as StableHLO text that ``vtrn hlo --run`` runs.

The program's graph goes through the same lowering as ``torch.compile(backend="neuron")``:
AOT's decomposition table (the core ATen table less the ops vtrn lowers whole), the same FX
rewrites, and one graph capture on ``neuron`` whose single group is the module. The module's
parameters are the program's flat inputs in the order of its graph signature (parameters,
buffers, constants, then the user inputs); its results are the graph's outputs (buffer
mutations first, then the user outputs). See docs/compile.md.
"""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree

from vtrn.compile._backend import _cannot_lower, _dense_copies, _unlowerable, decomposition_table


def exported_inputs(ep: torch.export.ExportedProgram) -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) for each parameter of export_stablehlo(ep)'s module, in order: the
    program's parameters, buffers and constants by name, then its example inputs
    (``input0``, ``input1``, ... in pytree order)."""
    from torch.export.graph_signature import InputKind

    args, kwargs = ep.example_inputs
    user = [x for x in pytree.tree_leaves((args, kwargs))]
    state = ep.state_dict
    out = []
    k = 0
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            value = user[k]
            out.append((f"input{k}", value))
            k += 1
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            value = state[spec.target] if spec.target in state else ep.constants[spec.target]
            out.append((spec.target, value))
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            out.append((spec.target, ep.constants[spec.target]))
        else:
            raise ValueError(
                f"export_stablehlo: input {spec.arg.name} is a {spec.kind.name} input; only "
                "parameters, buffers, constant tensors and tensor user inputs can be exported"
            )
    for name, value in out:
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"export_stablehlo: input {name} is a {type(value).__name__}, not a tensor; "
                "export the program with tensor inputs only"
            )
    return out


def _stop_recording(_C) -> None:
    try:
        _C._finish_export_recording([], [])
    except RuntimeError:
        pass  # the error being raised already says what went wrong


def export_stablehlo(ep: torch.export.ExportedProgram, *, device: int = 0) -> str:
    """The StableHLO text of |ep| (``torch.export.export(model, args)``), lowered through
    vtrn's lowering registry on ``neuron:<device>`` as one module. Raises RuntimeError naming
    the ops vtrn cannot lower, or when the graph does not run as one module."""
    from vtrn import _C

    if not isinstance(ep, torch.export.ExportedProgram):
        raise TypeError(
            f"export_stablehlo takes a torch.export.ExportedProgram, got {type(ep).__name__}; "
            "pass torch.export.export(model, args)"
        )
    inputs = exported_inputs(ep)
    ep = ep.run_decompositions(decomposition_table())
    gm = _dense_copies(ep.graph_module)
    # run_decompositions keeps what the table leaves out, such as linear; a composite op runs
    # as the ops it is made of, and the fallback check below catches any of them that fails.
    bad = [
        (name, node)
        for name, node in _unlowerable(gm)
        if not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")
    ]
    if bad:
        raise _cannot_lower("exported", bad)
    dev = torch.device("neuron", device)
    # A fresh dense copy of each input: the module's parameters are these buffers.
    args = [t.detach().to(dev).contiguous().clone() for _, t in inputs]
    before = _C._metrics()["fallbacks"]
    seen = set(_C.get_fallback_ops())
    _C._start_export_recording()
    _C._begin_graph_capture()
    try:
        with torch.no_grad():
            outputs = gm(*args)
    except BaseException:
        _C._end_graph_capture(device)
        _stop_recording(_C)
        raise
    _C._end_graph_capture(device)
    flat = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    for i, o in enumerate(flat):
        if not isinstance(o, torch.Tensor):
            _stop_recording(_C)
            raise TypeError(f"export_stablehlo: output {i} is a {type(o).__name__}, not a tensor")
    if _C._metrics()["fallbacks"] != before:
        _stop_recording(_C)
        ops = sorted(set(_C.get_fallback_ops()) - seen) or ["ops that fell back before"]
        raise RuntimeError(
            f"export_stablehlo: the program ran {', '.join(ops)} on the CPU fallback: vtrn "
            "cannot lower it for these inputs, so the program is not one StableHLO module; "
            "compute it outside the exported model"
        )
    return _C._finish_export_recording(args, flat)
