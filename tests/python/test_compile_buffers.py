"""torch.compile(backend="neuron") with planned buffers: a Llama step still matches eager and the
CPU while each graph's executable plans less scratch than its intermediates, and graph inputs
the graph mutates (written back into the input's buffer, in place where the plan allows it)
end with the CPU's values."""

import os
import sys

import pytest
import torch

import vtrn
from vtrn.compile import records

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
sys.path.insert(0, EXAMPLES)
import llama_step  # noqa: E402
from test_compile import train_losses  # noqa: E402  (tiny Llama steps, compiled or eager)

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

STEPS = 3


def test_compiled_llama_step_plans_less_scratch_than_its_intermediates_and_matches_eager():
    eager = train_losses(compiled=False, steps=STEPS)
    records.reset_dynamo_metrics()
    compiled = train_losses(compiled=True, steps=STEPS)
    assert vtrn.get_fallback_ops() == []
    torch.testing.assert_close(compiled, eager)
    cpu = torch.tensor(llama_step.train("cpu", torch.float32, STEPS, clip=0))
    torch.testing.assert_close(compiled, cpu, rtol=1e-4, atol=1e-4)
    graphs = {r.graph_name: r for r in records.get_dynamo_metrics()}
    assert len(graphs) == 2, list(graphs)
    for name, r in graphs.items():
        # Intermediates whose lifetimes do not overlap share bytes: the planned peak is below
        # the sum of the intermediates (what every run held before buffer assignment).
        assert 0 < r.planned_scratch_bytes < r.intermediate_bytes, (name, r)
    metrics = vtrn.metrics()
    assert 0 < metrics["planned_scratch_bytes"] <= metrics["intermediate_bytes"], metrics


def test_mutated_graph_inputs_end_with_the_cpus_values():
    # m and p are written back into their own buffers: m's update reads m element by element
    # (in place); p's new value reads p transposed, and the old p also feeds a matmul.
    def step(p, g, m):
        y = p @ g
        m.mul_(0.9).add_(g)
        p.copy_(p.t() + 0.5 * m)
        return y

    gen = torch.Generator().manual_seed(0)
    p0, g0, m0 = (torch.randn(48, 48, generator=gen) for _ in range(3))
    p_cpu, m_cpu = p0.clone(), m0.clone()
    y_cpu = step(p_cpu, g0, m_cpu)
    compiled = torch.compile(step, backend="neuron", fullgraph=True)
    p, g, m = (t.to("neuron") for t in (p0, g0, m0))
    p_ptr, m_ptr = p.data_ptr(), m.data_ptr()
    y = compiled(p, g, m)
    assert vtrn.get_fallback_ops() == []
    assert (p.data_ptr(), m.data_ptr()) == (p_ptr, m_ptr)
    torch.testing.assert_close(y.cpu(), y_cpu)
    torch.testing.assert_close(m.cpu(), m_cpu)
    torch.testing.assert_close(p.cpu(), p_cpu)
