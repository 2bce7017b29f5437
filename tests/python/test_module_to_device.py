"""Moving a module to `neuron` and back keeps its Parameters: tensors of `neuron` and of the
CPU are shallow-copy compatible, as CUDA's are, so nn.Module._apply swaps `.data` in place and
a Parameter shared by two submodules (tied weights) stays one Parameter."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import transformers

DEVICE = "neuron"


@pytest.mark.parametrize("direction", ["cpu_to_neuron", "neuron_to_cpu", "neuron_to_neuron"])
def test_cpu_and_neuron_tensors_are_shallow_copy_compatible(direction):
    cpu = torch.zeros(3)
    dev = torch.zeros(3, device=DEVICE)
    a, b = {"cpu_to_neuron": (cpu, dev), "neuron_to_cpu": (dev, cpu)}.get(direction, (dev, dev))
    assert torch._has_compatible_shallow_copy_type(a, b)
    # Also with tensors that carry no autograd keys (created under inference mode).
    with torch.inference_mode():
        ai, bi = a.clone(), b.clone()
        assert torch._has_compatible_shallow_copy_type(ai, bi)


def test_sparse_and_dense_stay_incompatible():
    # As on the CPU and CUDA: only dense with dense.
    sparse = torch.zeros(3).to_sparse()
    assert not torch._has_compatible_shallow_copy_type(sparse, torch.zeros(3, device=DEVICE))
    assert not torch._has_compatible_shallow_copy_type(torch.zeros(3, device=DEVICE), sparse)


def test_set_data_moves_a_parameter_to_neuron_and_back():
    p = nn.Parameter(torch.arange(6.0).reshape(2, 3))
    reference_keys = str(torch._C._dispatch_keys(torch.zeros(1, device=DEVICE, requires_grad=True)))
    new = torch.full((2, 3), 2.0, device=DEVICE)
    p.data = new
    assert isinstance(p, nn.Parameter) and p.requires_grad
    assert p.device == new.device and p.is_neuron
    assert p.untyped_storage().data_ptr() == new.untyped_storage().data_ptr()
    assert str(torch._C._dispatch_keys(p)) == reference_keys
    (p * p).sum().backward()
    assert p.grad.device.type == DEVICE
    torch.testing.assert_close(p.grad.cpu(), torch.full((2, 3), 4.0))
    p.data = torch.ones(2, 3)
    assert p.device.type == "cpu"
    assert str(torch._C._dispatch_keys(p)) == str(
        torch._C._dispatch_keys(torch.zeros(1, requires_grad=True))
    )
    # The gradient still on neuron would be accumulated into: as on CUDA, a CPU gradient
    # added to it raises, and clearing it first starts a CPU one.
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        (p * 3).sum().backward()
    p.grad = None
    (p * 3).sum().backward()  # a new accumulator on the CPU for the CPU data
    assert p.grad.device.type == "cpu"
    torch.testing.assert_close(p.grad, torch.full((2, 3), 3.0))


class SharedWeight(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Linear(4, 4)
        self.decode = nn.Linear(4, 4)
        self.decode.weight = self.encode.weight


def _unique_parameters(module):
    return len({id(p) for _, p in module.named_parameters(remove_duplicate=False)})


def test_shared_parameter_survives_to_neuron_and_back():
    torch.manual_seed(0)
    model = SharedWeight()
    weight = model.encode.weight
    model.encode.weight.grad = torch.ones(4, 4)
    count = len(list(model.parameters()))
    model.to(DEVICE)
    assert model.decode.weight is model.encode.weight is weight
    assert len(list(model.parameters())) == count == _unique_parameters(model)
    assert weight.device.type == DEVICE and weight.grad.device.type == DEVICE
    model.to("cpu")
    assert model.decode.weight is model.encode.weight is weight
    assert weight.device.type == "cpu" and weight.grad.device.type == "cpu"


def test_optimizer_made_before_to_keeps_training_the_moved_parameters():
    torch.manual_seed(0)
    cpu_model = SharedWeight()
    dev_model = SharedWeight()
    dev_model.load_state_dict(cpu_model.state_dict())
    cpu_opt = torch.optim.SGD(cpu_model.parameters(), lr=0.1)
    dev_opt = torch.optim.SGD(dev_model.parameters(), lr=0.1)
    dev_model.to(DEVICE)  # after the optimizer captured the Parameters, as scripts do
    x = torch.randn(3, 4)
    for _ in range(3):
        for model, opt, inp in ((cpu_model, cpu_opt, x), (dev_model, dev_opt, x.to(DEVICE))):
            opt.zero_grad()
            model.decode(model.encode(inp)).square().sum().backward()
            opt.step()
    for (name, c), d in zip(cpu_model.state_dict().items(), dev_model.state_dict().values()):
        torch.testing.assert_close(d.cpu(), c, msg=name)


def _gpt2(seed):
    config = transformers.GPT2Config(
        vocab_size=64,
        n_positions=16,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    torch.manual_seed(seed)
    return transformers.GPT2LMHeadModel(config)


def test_gpt2_tied_embedding_survives_to_neuron():
    model = _gpt2(0)
    count = len(list(model.parameters()))
    assert model.lm_head.weight is model.transformer.wte.weight
    model.to(DEVICE)
    assert len(list(model.parameters())) == count
    assert model.lm_head.weight is model.transformer.wte.weight
    assert model.lm_head.weight.device.type == DEVICE


def test_gpt2_trains_as_on_the_cpu():
    cpu_model = _gpt2(0)
    dev_model = _gpt2(0).to(DEVICE)
    tokens = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(1))
    runs = []
    for model, device in ((cpu_model, "cpu"), (dev_model, DEVICE)):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        ids = tokens.to(device)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, model.transformer.wte.weight.detach().cpu()))
    (cpu_losses, cpu_wte), (dev_losses, dev_wte) = runs
    torch.testing.assert_close(dev_losses, cpu_losses, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dev_wte, cpu_wte, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family", ["bert", "t5"])
def test_tied_models_keep_their_parameter_count(family):
    if family == "bert":
        config = transformers.BertConfig(
            vocab_size=64,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=16,
        )
        model = transformers.BertForMaskedLM(config)
    else:
        config = transformers.T5Config(
            vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=2
        )
        model = transformers.T5ForConditionalGeneration(config)
    count = len(list(model.parameters()))
    ids_before = [id(p) for p in model.parameters()]
    model.to(DEVICE)
    assert len(list(model.parameters())) == count
    assert [id(p) for p in model.parameters()] == ids_before
