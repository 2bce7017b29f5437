# Adapted for the `neuron` device from torch_openreg's tests/test_utils.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""DLPack capsules of neuron tensors."""

import torch


class TestDLPack:
    def test_open_device_dlpack(self):
        x_in = torch.randn(2, 3).to("neuron")
        capsule = torch.utils.dlpack.to_dlpack(x_in)
        x_out = torch.from_dlpack(capsule)
        assert x_out.device == x_in.device
        assert x_out.data_ptr() == x_in.data_ptr()  # the same memory, not a copy
        assert torch.equal(x_in.cpu(), x_out.cpu())

    def test_dlpack_of_another_device_and_a_view(self):
        base = torch.arange(12.0).reshape(3, 4).to("neuron:1")
        view = base[:, 1:3]
        x_out = torch.from_dlpack(torch.utils.dlpack.to_dlpack(view))
        assert x_out.device == torch.device("neuron:1")
        assert x_out.stride() == view.stride()
        assert torch.equal(x_out.cpu(), view.cpu())
