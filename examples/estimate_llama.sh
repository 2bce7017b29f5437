#!/usr/bin/env bash
# Llama-3-70B on 4 trn2.48xlarge nodes (TP4 x FSDP64, sequence 4096, full activation
# checkpointing), estimated without the hardware: rank 0 of the 256-rank world runs in
# shape-only execution. Then the planner's answer for the same layout, and a timeline picture
# of two of the model's layers. docs/estimate.md compares the two answers part by part.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.}"
mkdir -p "$out"

vtrn estimate --nodes 4 --nproc-per-node 64 --ranks 0 --steps 3 -- \
    examples/train_llama.py --size llama3-70b --layout tp4-fsdp2 --checkpointing full

vtrn plan --model llama3-70b --nodes 4 --seq 4096 --global-batch 64 \
    --layout pp=1,replicate=1,shard=64,tp=4,micro_batch=1,checkpointing=full

vtrn estimate --nodes 4 --nproc-per-node 64 --ranks 0 --steps 2 \
    --trace "$out/llama70b_2layers.json" -- \
    examples/train_llama.py --size llama3-70b --layers 2 --layout tp4-fsdp2 --checkpointing full
vtrn trace "$out/llama70b_2layers.json" --png "$out/llama70b_2layers.png"
