"""The device generator: seeds, state, Philox offsets, and the native random kernels."""

import pytest
import torch
from conftest import run_python


def test_same_seed_gives_the_same_randn_across_runs():
    code = """
        import torch
        torch.manual_seed(1234)
        print(torch.randn(6, device="neuron").cpu().tolist())
    """
    first, second = run_python(code), run_python(code)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout == second.stdout
    assert len(eval(first.stdout)) == 6


def test_seeding_controls_the_device_generator():
    torch.neuron.manual_seed(7)
    a = torch.rand(100, device="neuron").cpu()
    torch.neuron.manual_seed(7)
    b = torch.rand(100, device="neuron").cpu()
    torch.neuron.manual_seed(8)
    c = torch.rand(100, device="neuron").cpu()
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.neuron.initial_seed() == 8


def test_state_is_seed_and_offset_and_round_trips():
    torch.neuron.manual_seed(42)
    state = torch.neuron.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    seed, offset = state[:8].view(torch.int64).item(), state[8:].view(torch.int64).item()
    assert (seed, offset) == (42, 0)
    first = torch.randn(10, device="neuron").cpu()
    # 10 elements advance the offset to the next multiple of 4, as DTensor's tracker assumes.
    assert torch.neuron.get_rng_state()[8:].view(torch.int64).item() == 12
    torch.neuron.set_rng_state(state)
    assert torch.equal(torch.randn(10, device="neuron").cpu(), first)


def test_an_offset_shard_draws_what_the_whole_tensor_draws_there():
    torch.neuron.manual_seed(3)
    whole = torch.rand(16, device="neuron").cpu()
    state = torch.neuron.get_rng_state()
    state[8:] = torch.tensor([8], dtype=torch.int64).view(torch.uint8)
    state[:8] = torch.tensor([3], dtype=torch.int64).view(torch.uint8)
    torch.neuron.set_rng_state(state)
    shard = torch.rand(8, device="neuron").cpu()
    assert torch.equal(shard, whole[8:])


def test_bad_state_is_rejected():
    with pytest.raises(RuntimeError, match="must be 16 bytes"):
        torch.neuron.set_rng_state(torch.zeros(8, dtype=torch.uint8))


def test_explicit_generator():
    g = torch.Generator(device="neuron")
    g.manual_seed(5)
    a = torch.randn(4, device="neuron", generator=g).cpu()
    g.manual_seed(5)
    b = torch.randn(4, device="neuron", generator=g).cpu()
    assert torch.equal(a, b)
    with pytest.raises(RuntimeError, match="Expected a neuron generator"):
        torch.empty(4, device="neuron").normal_(generator=torch.Generator())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_distributions_have_the_right_moments(dtype):
    torch.neuron.manual_seed(0)
    n = 200_000
    u = torch.empty(n, dtype=dtype, device="neuron").uniform_(-2.0, 4.0).cpu().double()
    assert u.min() >= -2.0 and u.max() < 4.0 + 1e-2
    assert abs(u.mean().item() - 1.0) < 0.03  # mean 1, sd 6/sqrt(12)/sqrt(n) ~ 0.004
    z = torch.empty(n, dtype=dtype, device="neuron").normal_(3.0, 2.0).cpu().double()
    assert abs(z.mean().item() - 3.0) < 0.03 and abs(z.std().item() - 2.0) < 0.03
    b = torch.empty(n, dtype=dtype, device="neuron").bernoulli_(0.25).cpu().double()
    assert set(b.unique().tolist()) <= {0.0, 1.0}
    assert abs(b.mean().item() - 0.25) < 0.01


def test_random_integers_stay_in_range():
    torch.neuron.manual_seed(0)
    r = torch.empty(10_000, dtype=torch.int64, device="neuron").random_(3, 9).cpu()
    assert r.min().item() == 3 and r.max().item() == 8
    r = torch.empty(10_000, dtype=torch.int8, device="neuron").random_().cpu()
    assert r.min().item() >= 0 and r.max().item() <= 127
    r = torch.randint(0, 5, (10_000,), device="neuron").cpu()
    assert set(r.unique().tolist()) == {0, 1, 2, 3, 4}


def test_randperm_is_a_permutation():
    torch.neuron.manual_seed(0)
    p = torch.randperm(1000, device="neuron").cpu()
    assert sorted(p.tolist()) == list(range(1000))
    assert p.tolist() != list(range(1000))


def test_dropout_drops_p_and_scales_the_rest():
    torch.neuron.manual_seed(0)
    x = torch.ones(100_000, device="neuron")
    y = torch.nn.functional.dropout(x, p=0.3, training=True).cpu()
    kept = y != 0
    assert abs(1 - kept.double().mean().item() - 0.3) < 0.01
    assert torch.allclose(y[kept], torch.full_like(y[kept], 1 / 0.7))
    assert torch.equal(torch.nn.functional.dropout(x, p=0.3, training=False).cpu(), x.cpu())


def test_dtensor_offset_based_rng_tracker_uses_the_device_generator():
    # DTensor picks its OffsetBasedRNGTracker when the device module has set_rng_state, and
    # then reads and writes the (seed, offset) state: random DTensors must be reproducible.
    result = run_python(
        """
        import warnings; warnings.filterwarnings("ignore")
        import torch, torch.distributed as dist
        import torch.distributed.tensor._random as dtensor_random
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import DTensor, Shard
        dist.init_process_group("neuron", store=dist.HashStore(), rank=0, world_size=1)
        mesh = init_device_mesh("neuron", (1,))
        draws = []
        for _ in range(2):
            torch.manual_seed(5)
            d = DTensor.from_local(torch.empty(8, device="neuron"), mesh, [Shard(0)]).uniform_()
            draws.append(d.full_tensor().cpu())
        print(type(dtensor_random._rng_tracker).__name__, torch.equal(draws[0], draws[1]))
        dist.destroy_process_group()
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "OffsetBasedRNGTracker True"
