# Adapted for the `neuron` device from torch_openreg's tests/test_autocast.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""torch.autocast(device_type="neuron"): CUDA's op lists and casting policies."""

import pytest
import torch


class TestAutocast:
    def test_neuron_autocast_error_message(self):
        # openreg supports only float16, so float32 warns there; neuron supports bfloat16,
        # float16 and float32 (torch.neuron.get_amp_supported_dtype()), so float64 warns here.
        assert torch.float32 in torch.neuron.get_amp_supported_dtype()
        with pytest.warns(
            UserWarning,
            match="In neuron autocast, but the target dtype is not supported. Disabling autocast."
            "\nneuron Autocast only supports dtypes of torch.bfloat16, torch.float16, "
            "torch.float32 currently.",
        ):
            with torch.autocast(device_type="neuron", dtype=torch.float64):
                x = torch.randn(2, 3, device="neuron")
                assert torch.mm(x, x.t()).dtype == torch.float32  # autocast is off

    @pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
    def test_neuron_autocast_lower_precision(self, dtype):
        x = torch.randn(2, 3)
        y = torch.randn(3, 3)
        with torch.amp.autocast(device_type="neuron", dtype=dtype):
            result = torch.mm(x.to("neuron"), y.to("neuron"))
        assert result.dtype == dtype
        torch.testing.assert_close(result.cpu(), (x.to(dtype) @ y.to(dtype)))

    def test_neuron_autocast_float32_supported(self):
        with torch.amp.autocast(device_type="neuron"):
            x = torch.randn(2, device="neuron", dtype=torch.float16)
            y = torch.randn(2, device="neuron", dtype=torch.float16)
            result = torch.dot(x, y)  # CUDA's autocast runs dot in its fast dtype...
            assert result.dtype == torch.float16
            assert (
                torch.nn.functional.softmax(x, dim=0).dtype == torch.float32
            )  # ...softmax in fp32

    def test_autocast_fast_dtype(self):
        # as on CUDA, float16 until set
        assert torch.get_autocast_dtype(device_type="neuron") == torch.half
