"""`import torch` alone must bring up the neuron device, and a failed load must not break torch."""

import os

from conftest import run_python


def test_import_torch_alone_creates_copies_and_adds_neuron_tensors():
    result = run_python(
        """
        import torch
        a = torch.tensor([1.0, 2.0, 3.0]).to("neuron")
        b = torch.ones(3, device="neuron")
        c = a + b
        assert c.device == torch.device("neuron:0"), c.device
        assert a.is_neuron and not a.cpu().is_neuron
        assert c.cpu().tolist() == [2.0, 3.0, 4.0], c.cpu().tolist()
        assert torch.accelerator.current_accelerator() == torch.device("neuron")
        print("ok", torch.neuron.device_count())
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", "64"]


def test_autoload_can_be_disabled_and_import_vtrn_registers_instead():
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    result = run_python(
        """
        import torch
        assert torch._C._get_privateuse1_backend_name() == "privateuseone"
        import vtrn
        assert torch._C._get_privateuse1_backend_name() == "neuron"
        print(torch.zeros(2, device="neuron").cpu().tolist())
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0.0, 0.0]"


def test_failed_load_warns_with_the_reason_and_torch_still_works():
    # Another extension holds PrivateUse1, so vtrn cannot register; torch's own autoload call
    # of the entry point must then warn, not raise.
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    result = run_python(
        """
        import warnings
        import torch
        torch.utils.rename_privateuse1_backend("otherdev")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch._import_device_backends()
        messages = [str(w.message) for w in caught if "vtrn" in str(w.message)]
        assert len(messages) == 1, messages
        print(messages[0])
        print(torch.ones(2).sum().item())
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.strip().splitlines()
    assert "could not register the 'neuron' device" in first
    assert "'otherdev'" in first
    assert second == "2.0"
