"""The layer order of the C++ sources: every `#include "vtrn/..."` points down (or within its
own layer), and only src/vtrn/torch/ includes PyTorch headers.

Order, bottom-up: hw, topo, coll, cost, nki, plan, hlo, compiler, runtime, torch. The bindings
(torch-free extension modules) sit above runtime, beside torch, and may not include it.
"""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

LAYERS = ["hw", "topo", "coll", "cost", "nki", "plan", "hlo", "compiler", "runtime", "torch"]
# Beside torch: may include every layer below it, never torch.
SIBLINGS_OF_TORCH = {"bindings"}

VTRN_INCLUDE = re.compile(r'^\s*#\s*include\s+"vtrn/([^/"]+)/[^"]*"', re.MULTILINE)
TORCH_INCLUDE = re.compile(r'^\s*#\s*include\s+[<"](torch|ATen|c10|caffe2)/', re.MULTILINE)
SUFFIXES = {".h", ".cc", ".cpp"}


def rank(layer: str) -> int | None:
    """Position of |layer| in the order; bindings rank with torch. None for an unknown layer."""
    if layer in SIBLINGS_OF_TORCH:
        return LAYERS.index("torch")
    return LAYERS.index(layer) if layer in LAYERS else None


def violations(files: dict[str, str]) -> list[str]:
    """Every layering violation in |files| (path under src/ -> text), one line each."""
    found = []
    for path, text in sorted(files.items()):
        parts = Path(path).parts
        if len(parts) < 3 or parts[0] != "vtrn":
            continue
        layer = parts[1]
        own = rank(layer)
        if own is None:
            found.append(f"{path}: layer '{layer}' is not in the layer order {LAYERS}")
            continue
        for m in VTRN_INCLUDE.finditer(text):
            target = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            target_rank = rank(target)
            if target_rank is None:
                found.append(f"{path}:{line}: includes unknown layer '{target}'")
            elif target_rank > own or (target != layer and target_rank == own):
                found.append(
                    f"{path}:{line}: {layer} includes {target}, which is above it "
                    f"(order: {' -> '.join(LAYERS)})"
                )
        if layer != "torch":
            for m in TORCH_INCLUDE.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path}:{line}: a PyTorch header outside src/vtrn/torch/")
    return found


def source_files() -> dict[str, str]:
    return {
        str(p.relative_to(SRC)): p.read_text(encoding="utf-8")
        for p in SRC.rglob("*")
        if p.suffix in SUFFIXES and p.is_file()
    }


def test_every_include_points_down_the_layer_order():
    files = source_files()
    assert len(files) > 100, f"found only {len(files)} C++ files under {SRC}"
    assert violations(files) == []


def test_an_upward_include_is_reported():
    files = {
        "vtrn/hw/specs.cc": '#include "vtrn/hw/chip.h"\n#include "vtrn/plan/planner.h"\n',
        "vtrn/runtime/stream.cc": '#include "vtrn/torch/device.h"\n',
        "vtrn/bindings/core.cc": '#include "vtrn/torch/eager.h"\n',
        "vtrn/plan/memory.cc": '#include "vtrn/coll/route.h"\n#include "vtrn/plan/layout.h"\n',
    }
    assert violations(files) == [
        "vtrn/bindings/core.cc:1: bindings includes torch, which is above it "
        "(order: hw -> topo -> coll -> cost -> nki -> plan -> hlo -> compiler -> runtime -> torch)",
        "vtrn/hw/specs.cc:2: hw includes plan, which is above it "
        "(order: hw -> topo -> coll -> cost -> nki -> plan -> hlo -> compiler -> runtime -> torch)",
        "vtrn/runtime/stream.cc:1: runtime includes torch, which is above it "
        "(order: hw -> topo -> coll -> cost -> nki -> plan -> hlo -> compiler -> runtime -> torch)",
    ]


def test_a_torch_header_outside_the_torch_layer_is_reported():
    files = {
        "vtrn/torch/eager.cpp": "#include <ATen/ATen.h>\n",
        "vtrn/runtime/executor.cc": "#include <vector>\n#include <torch/torch.h>\n",
        "vtrn/hlo/ir.h": '#include "c10/core/Device.h"\n',
    }
    assert violations(files) == [
        "vtrn/hlo/ir.h:1: a PyTorch header outside src/vtrn/torch/",
        "vtrn/runtime/executor.cc:2: a PyTorch header outside src/vtrn/torch/",
    ]


def test_a_layer_outside_the_order_is_reported():
    files = {"vtrn/misc/util.cc": '#include "vtrn/hw/chip.h"\n'}
    assert violations(files) == [
        f"vtrn/misc/util.cc: layer 'misc' is not in the layer order {LAYERS}"
    ]
