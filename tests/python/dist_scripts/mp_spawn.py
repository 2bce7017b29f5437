"""Run with python (no launcher) and a scratch directory: torch.multiprocessing.spawn starts 4
workers, each selects its rank's device the CUDA way, joins a `neuron` process group and
all-reduces. Another spawned process then tries the core rank 0 holds and is refused. Prints
one line per process."""

import os
import pathlib
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 4


def wait_for(path):
    deadline = time.monotonic() + 90
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def worker(rank, port, scratch):
    torch.neuron.set_device(rank)
    dist.init_process_group(
        "neuron", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    x = torch.full((3,), float(rank + 1), device=f"neuron:{rank}")
    dist.all_reduce(x)
    placement = vtrn_placement(rank)
    # One write per line: the workers share the parent's stdout, and print() writes the text and
    # the newline apart, so two workers' lines could run together.
    sys.stdout.write(
        f"worker {rank} {x.device} {x.cpu().tolist()} core {placement} "
        f"sees {torch.neuron.device_count()}\n"
    )
    sys.stdout.flush()
    if rank == 0:  # holds core 0 until the intruder has tried it
        (scratch / "holding").touch()
        wait_for(scratch / "tried")
    dist.barrier()
    dist.destroy_process_group()


def vtrn_placement(rank):
    from vtrn.distributed.placement import _local_placement

    return _local_placement(rank)[1]


def intruder(_, scratch):
    wait_for(scratch / "holding")
    try:
        torch.ones(1, device="neuron:0").cpu()
        print("intruder ran", flush=True)
    except RuntimeError as err:
        print("intruder ERROR", " ".join(str(err).split()), flush=True)
    (scratch / "tried").touch()


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scratch = pathlib.Path(sys.argv[1])
    workers = mp.spawn(worker, args=(port, scratch), nprocs=WORLD, join=False)
    # A sibling of the workers (same parent): the node is theirs, core 0 is rank 0's.
    other = mp.spawn(intruder, args=(scratch,), join=False)
    other.join()
    workers.join()
    print("parent", os.getpid(), flush=True)
