# Adapted for the `neuron` device from torch_openreg's tests/test_rnn.py, in PyTorch's
# test/cpp_extensions/open_registration_extension/torch_openreg/tests/.
# PyTorch: Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the other copyright holders
# named in LICENSE-pytorch (next to this file); BSD-3-Clause licence, reproduced there.
"""nn.LSTM (and nn.GRU, which takes the same fused-cell path on a PrivateUse1 device) on neuron:
shapes, devices, packed sequences, and the CPU's values and gradients."""

import copy

import torch
import torch.nn as nn


class TestLSTM:
    def test_lstm_basic(self):
        input_size, hidden_size, num_layers = 10, 20, 1
        seq_len, batch_size = 5, 2
        lstm = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        lstm_neuron = lstm.to("neuron")
        x = torch.randn(seq_len, batch_size, input_size, device="neuron")
        output, (h_n, c_n) = lstm_neuron(x)
        assert output.device.type == h_n.device.type == c_n.device.type == "neuron"
        assert output.shape == torch.Size([seq_len, batch_size, hidden_size])
        assert h_n.shape == torch.Size([num_layers, batch_size, hidden_size])
        assert c_n.shape == torch.Size([num_layers, batch_size, hidden_size])

    def test_lstm_multi_layer(self):
        lstm = nn.LSTM(input_size=10, hidden_size=20, num_layers=3).to("neuron")
        output, (h_n, c_n) = lstm(torch.randn(5, 2, 10, device="neuron"))
        assert output.shape == torch.Size([5, 2, 20])
        assert h_n.shape == c_n.shape == torch.Size([3, 2, 20])

    def test_lstm_bidirectional(self):
        lstm = nn.LSTM(input_size=10, hidden_size=20, num_layers=2, bidirectional=True)
        output, (h_n, c_n) = lstm.to("neuron")(torch.randn(5, 2, 10, device="neuron"))
        assert output.device.type == "neuron"
        assert output.shape == torch.Size([5, 2, 40])
        assert h_n.shape == c_n.shape == torch.Size([4, 2, 20])

    def test_lstm_batch_first(self):
        lstm = nn.LSTM(input_size=10, hidden_size=20, batch_first=True).to("neuron")
        output, _ = lstm(torch.randn(2, 5, 10, device="neuron"))
        assert output.shape == torch.Size([2, 5, 20])

    def test_lstm_with_initial_hidden(self):
        lstm = nn.LSTM(input_size=10, hidden_size=20, num_layers=1).to("neuron")
        x = torch.randn(5, 2, 10, device="neuron")
        h0 = torch.randn(1, 2, 20, device="neuron")
        c0 = torch.randn(1, 2, 20, device="neuron")
        output, (h_n, c_n) = lstm(x, (h0, c0))
        assert output.device.type == h_n.device.type == c_n.device.type == "neuron"

    def test_lstm_packed_sequence(self):
        torch.manual_seed(0)
        lstm = nn.LSTM(input_size=10, hidden_size=20)
        sequences = [torch.randn(5, 10), torch.randn(3, 10), torch.randn(1, 10)]
        packed = nn.utils.rnn.pack_sequence(sequences, enforce_sorted=True)
        out_cpu, (h_cpu, c_cpu) = lstm(packed)
        output_packed, (h_n, c_n) = copy.deepcopy(lstm).to("neuron")(packed.to("neuron"))
        assert output_packed.data.device.type == "neuron"
        assert h_n.device.type == c_n.device.type == "neuron"
        torch.testing.assert_close(output_packed.data.cpu(), out_cpu.data, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h_n.cpu(), h_cpu, rtol=1e-5, atol=1e-5)

    def test_lstm_cpu_parity(self):
        lstm = nn.LSTM(input_size=8, hidden_size=16, num_layers=2, bidirectional=True)
        x_cpu = torch.randn(4, 3, 8)
        output_cpu, (h_cpu, c_cpu) = lstm(x_cpu)
        output_neuron, (h_neuron, c_neuron) = lstm.to("neuron")(x_cpu.to("neuron"))
        torch.testing.assert_close(output_cpu, output_neuron.cpu(), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h_cpu, h_neuron.cpu(), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(c_cpu, c_neuron.cpu(), rtol=1e-5, atol=1e-5)

    def test_lstm_backward_matches_the_cpu(self):
        lstm = nn.LSTM(input_size=6, hidden_size=5)
        lstm_n = copy.deepcopy(lstm).to("neuron")
        x = torch.randn(4, 2, 6)
        lstm(x)[0].sum().backward()
        lstm_n(x.to("neuron"))[0].sum().backward()
        for p_cpu, p_n in zip(lstm.parameters(), lstm_n.parameters()):
            assert p_n.grad.device.type == "neuron"
            torch.testing.assert_close(p_n.grad.cpu(), p_cpu.grad, rtol=1e-5, atol=1e-5)


class TestGRU:
    def test_gru_cpu_parity_and_gradients(self):
        gru = nn.GRU(input_size=6, hidden_size=5, num_layers=2, bidirectional=True)
        gru_n = copy.deepcopy(gru).to("neuron")
        x = torch.randn(4, 3, 6)
        h0 = torch.randn(4, 3, 5)
        out_c, h_c = gru(x, h0)
        out_n, h_n = gru_n(x.to("neuron"), h0.to("neuron"))
        assert out_n.device.type == h_n.device.type == "neuron"
        torch.testing.assert_close(out_n.cpu(), out_c, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h_n.cpu(), h_c, rtol=1e-5, atol=1e-5)
        (out_c.sum() + h_c.sum()).backward()
        (out_n.sum() + h_n.sum()).backward()
        for p_cpu, p_n in zip(gru.parameters(), gru_n.parameters()):
            torch.testing.assert_close(p_n.grad.cpu(), p_cpu.grad, rtol=1e-5, atol=1e-5)

    def test_cells_without_bias(self):
        for cell in (nn.LSTMCell(4, 3, bias=False), nn.GRUCell(4, 3, bias=False)):
            cell_n = copy.deepcopy(cell).to("neuron")
            x = torch.randn(2, 4)
            out_c = cell(x)
            out_n = cell_n(x.to("neuron"))
            out_c = out_c[0] if isinstance(out_c, tuple) else out_c
            out_n = out_n[0] if isinstance(out_n, tuple) else out_n
            torch.testing.assert_close(out_n.cpu(), out_c, rtol=1e-5, atol=1e-5)
            out_c.sum().backward()
            out_n.sum().backward()
            for p_cpu, p_n in zip(cell.parameters(), cell_n.parameters()):
                torch.testing.assert_close(p_n.grad.cpu(), p_cpu.grad, rtol=1e-5, atol=1e-5)
