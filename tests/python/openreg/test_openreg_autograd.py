# Adapted for the `neuron` device from torch_openreg's tests/test_autograd.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""The autograd engine on neuron: one device thread per device, gradients as on the CPU."""

import os

import torch


class TestAutograd:
    def test_autograd_init(self):
        # make sure autograd is initialized
        torch.ones(2, requires_grad=True, device="neuron").sum().backward()

        task_path = f"/proc/{os.getpid()}/task"
        thread_names = set()
        for tid in os.listdir(task_path):
            try:
                with open(f"{task_path}/{tid}/comm") as file:
                    thread_names.add(file.read().strip())
            except FileNotFoundError:  # the thread ended meanwhile
                continue
        for i in range(torch.accelerator.device_count()):
            assert f"pt_autograd_{i}" in thread_names

    def test_backward_runs_on_the_device_thread_of_the_tensor(self):
        # backward of a neuron:1 graph runs with neuron:1 current, as on CUDA
        seen = []

        class Probe(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                seen.append(torch.accelerator.current_device_index())
                return grad * 2

        x = torch.ones(3, device="neuron:1", requires_grad=True)
        Probe.apply(x).sum().backward()
        assert seen == [1]
        assert x.grad.device == torch.device("neuron:1")
        assert x.grad.cpu().tolist() == [2.0, 2.0, 2.0]

    def test_gradients_match_the_cpu(self):
        torch.manual_seed(0)
        w = torch.randn(5, 4)
        x = torch.randn(3, 5)
        w_n = w.to("neuron").requires_grad_(True)
        w_c = w.clone().requires_grad_(True)
        for t, weight in (("neuron", w_n), ("cpu", w_c)):
            torch.tanh(x.to(t) @ weight).pow(2).mean().backward()
        assert w_n.grad.device.type == "neuron"
        torch.testing.assert_close(w_n.grad.cpu(), w_c.grad, rtol=1e-5, atol=1e-6)
