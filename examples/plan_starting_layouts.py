"""The starting-layout table of "Best practices for training on AWS Neuron", reproduced by the
planner (vtrn.plan).

Run: python examples/plan_starting_layouts.py
Assumptions (docs/planner.md): trn2.48xlarge at LNC2, sequence length 2048, global batch 512 on
one node and 1024 on four, bf16 compute with fp32 master weights and AdamW state; the planner
chooses checkpointing and micro-batch. No torch needed.
"""

from vtrn import plan

# (workload, the document's starting layout, the planner's question)
ROWS = [
    (
        "dense model below ~14B, one node",
        "FSDP64, TP1",
        dict(model="llama2-7b", nodes=1, global_batch=512),
    ),
    (
        "dense model 14B-32B, one node",
        "TP4 x FSDP16",
        dict(model="qwen3-32b", nodes=1, global_batch=512),
    ),
    ("70B model, four nodes", "TP4 x FSDP64", dict(model="llama3-70b", nodes=4, global_batch=1024)),
    (
        "one-node layout scaled to four nodes",
        "HSDP",
        dict(model="llama2-7b", nodes=4, global_batch=512),
    ),
]

for workload, documented, question in ROWS:
    best = plan.plan(seq=2048, top=1, **question).layouts[0]
    mesh = f"{tuple(best.mesh_shape)} {tuple(best.mesh_axes)}"
    print(
        f"{workload:<38} document: {documented:<13} planner ({question['model']}): {mesh:<40} "
        f"{best.tokens_per_second:>9.0f} tokens/s, {best.memory.total / 2**30:.1f} GiB per rank"
    )
