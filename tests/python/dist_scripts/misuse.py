"""Run under torchrun with 2 processes: prints the error of each misuse, one per line."""

import sys
import warnings

import torch
import torch.distributed as dist

warnings.filterwarnings("ignore")
case = sys.argv[1]
try:
    dist.init_process_group("neuron")
    if case == "cpu-tensor":
        # The input is on neuron, so the neuron backend runs; one output is on cpu.
        outputs = [torch.empty(2, device="neuron"), torch.empty(2)]
        dist.all_gather(outputs, torch.ones(2, device="neuron"))
    else:
        dist.all_reduce(torch.ones(2, device="neuron"))
    print("no error", flush=True)
except Exception as err:  # noqa: BLE001 - the error is the result
    print(f"ERROR {' '.join(str(err).split())}", flush=True)
