"""all_reduce bandwidth over 8 local processes, 1 MB to 256 MB: the `neuron` backend on
neuron tensors against Gloo on cpu tensors, in the same run ("cpu:gloo,neuron:neuron").

Run directly: it launches itself under `vtrn run --nproc-per-node 8`. Rank 0 prints, per
size, the algorithm bandwidth (bytes / time) of each and their ratio (neuron / gloo).
"""

import os
import subprocess
import sys
import time

SIZES_MB = [1, 4, 16, 64, 256]
REPEATS = 10


def worker():
    import torch
    import torch.distributed as dist

    dist.init_process_group("cpu:gloo,neuron:neuron")
    rank = dist.get_rank()
    dev = torch.device("neuron", torch.neuron.current_device())

    def best_seconds(tensor):
        best = float("inf")
        for _ in range(REPEATS):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(tensor)
            if tensor.is_neuron:
                torch.neuron.synchronize()
            best = min(best, time.perf_counter() - start)
        return best

    if rank == 0:
        print(f"all_reduce, {dist.get_world_size()} processes; GB/s = bytes / time")
        print(f"{'size':>8}  {'gloo cpu':>10}  {'neuron':>10}  {'ratio':>6}")
    for mb in SIZES_MB:
        n = mb * 2**20 // 4
        cpu = torch.ones(n)
        neuron = torch.ones(n, device=dev)
        t_cpu = best_seconds(cpu)  # interleaved per size: drift hits both alike
        t_neuron = best_seconds(neuron)
        if rank == 0:
            gbps = lambda t: mb * 2**20 / t / 1e9  # noqa: E731
            print(
                f"{mb:>5} MB  {gbps(t_cpu):>10.2f}  {gbps(t_neuron):>10.2f}  {t_cpu / t_neuron:>6.2f}",
                flush=True,
            )
        del cpu, neuron
    dist.destroy_process_group()


if __name__ == "__main__":
    if os.environ.get("LOCAL_RANK") is not None:
        worker()
    else:
        sys.exit(
            subprocess.call(
                [sys.executable, "-m", "vtrn.cli", "run", "--nproc-per-node", "8", __file__]
            )
        )
