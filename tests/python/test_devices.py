"""Which cores a process sees, device properties and autocast."""

import os

import pytest
import torch
from conftest import run_python


def devices_under(**env_vars):
    env = dict(os.environ, **env_vars)
    result = run_python(
        """
        import torch
        print(torch.neuron.device_count(), torch.neuron.get_device_properties(0).core,
              torch.neuron.get_device_name(0))
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    count, core, name = result.stdout.strip().split(" ", 2)
    return int(count), int(core), name


def test_visible_cores_range_shows_four_devices():
    assert devices_under(NEURON_RT_VISIBLE_CORES="4-7")[:2] == (4, 4)


def test_num_cores_and_instances():
    assert devices_under(NEURON_RT_NUM_CORES="2")[:2] == (2, 0)
    assert devices_under(NEURON_LOGICAL_NC_CONFIG="1")[0] == 128
    count, _, name = devices_under(NEURON_RT_FAKE_INSTANCE_TYPE="trn1.32xlarge")
    assert count == 32 and name.startswith("Trainium NeuronCore-v2 (trn1.32xlarge")


def test_bad_environment_disables_the_device_with_the_reason():
    env = dict(os.environ, NEURON_RT_VISIBLE_CORES="60-70")
    result = run_python(
        """
        import torch
        print(torch.neuron.is_available(), torch.neuron.device_count())
        try:
            torch.ones(1, device="neuron")
        except RuntimeError as e:
            print(e)
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    first, message = result.stdout.strip().split("\n", 1)
    assert first == "False 0"
    assert "NEURON_RT_VISIBLE_CORES='60-70' names core 70, which does not exist" in message


def test_device_properties():
    props = torch.neuron.get_device_properties("neuron:2")
    assert props.name == "Trainium2 NeuronCore-v3 (trn2.48xlarge, LNC2)"
    assert props.logical_cores_per_chip == 4 and props.lnc == 2 and props.core == 2
    assert torch.neuron.get_device_name() == props.name
    assert torch.neuron.is_bf16_supported()
    assert torch.neuron.get_amp_supported_dtype() == [torch.bfloat16, torch.float16, torch.float32]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_matches_cpu_autocast_conventions(dtype):
    a = torch.randn(8, 16)
    b = torch.randn(16, 4)
    with torch.autocast(device_type="neuron", dtype=dtype):
        out = torch.mm(a.to("neuron"), b.to("neuron"))
        summed = torch.sum(out.float(), dim=0)  # fp32 list op stays float32
    assert out.dtype == dtype
    assert summed.dtype == torch.float32
    # The CPU computing in the same dtype is the oracle.
    assert torch.equal(out.cpu(), torch.mm(a.to(dtype), b.to(dtype)))
