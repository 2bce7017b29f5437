"""One thread budget: the executor's pool (and the OpenBLAS and oneDNN threads it drives)
follows torch.set_num_threads and, through torch's default, OMP_NUM_THREADS; VTRN_NUM_THREADS
fixes it. Each case runs in a fresh process, since the budget is process-wide."""

import json
import os

from conftest import run_python

SCRIPT = """
import json, torch, vtrn
from vtrn import _C

def budget_after_an_op():
    (torch.ones(4, device="neuron") + 1).cpu()
    return _C._executor_threads()

seen = {"start": (torch.get_num_threads(), budget_after_an_op())}
for n in (1, 3, 2):
    torch.set_num_threads(n)
    seen[str(n)] = (torch.get_num_threads(), budget_after_an_op())
print(json.dumps(seen))
"""


def run(**env_vars):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "VTRN_NUM_THREADS")}
    env.update(env_vars)
    proc = run_python(SCRIPT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_executor_threads_follow_torch_set_num_threads():
    seen = run()
    for key, (torch_threads, executor) in seen.items():
        assert executor == torch_threads, (key, seen)
    assert [seen[k][1] for k in ("1", "3", "2")] == [1, 3, 2]


def test_omp_num_threads_sets_the_starting_budget():
    seen = run(OMP_NUM_THREADS="1")
    assert seen["start"] == [1, 1]


def test_vtrn_num_threads_fixes_the_budget():
    seen = run(VTRN_NUM_THREADS="2", OMP_NUM_THREADS="1")
    assert {tuple(v)[1] for v in seen.values()} == {2}
