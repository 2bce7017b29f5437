"""Tiny models of the families real model zoos train, built from configs (no downloads), train
on neuron with the CPU's losses and without a single CPU fallback: HF Llama, Qwen3, Mixtral and
Qwen3-MoE (HF's default experts implementation), GPT-2, BERT, T5, ViT and Mamba, and a ResNet-18
written here (torchvision's wheels do not install beside this torch). Each starts from the CPU
model's weights and takes a few AdamW steps in float32 and under bfloat16 autocast."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import transformers

import vtrn

STEPS = 3
VOCAB = 96
# Under bfloat16 autocast neuron follows CUDA's autocast lists and the CPU its own, so the two
# runs round different ops to bfloat16: compare them at a few bfloat16 roundings (2**-8 each).
AUTOCAST_TOL = {"rtol": 2e-2, "atol": 2e-2}


def _text_batch(seed=1, seq=8):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (2, seq), generator=gen)
    return {"input_ids": ids, "labels": ids.clone()}


def llama():
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(cfg), _text_batch()


def qwen3():
    cfg = transformers.Qwen3Config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=32,
    )  # fmt: skip
    return transformers.Qwen3ForCausalLM(cfg), _text_batch()


def mixtral():
    cfg = transformers.MixtralConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
        num_local_experts=4, num_experts_per_tok=2,
    )  # fmt: skip
    return transformers.MixtralForCausalLM(cfg), _text_batch()


def qwen3_moe():
    cfg = transformers.Qwen3MoeConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=96, moe_intermediate_size=48,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        max_position_embeddings=32, num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1,
    )  # fmt: skip
    return transformers.Qwen3MoeForCausalLM(cfg), _text_batch()


def gpt2():
    cfg = transformers.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=32)
    return transformers.GPT2LMHeadModel(cfg), _text_batch()


def bert():
    cfg = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=32,
    )  # fmt: skip
    batch = _text_batch()
    batch["labels"][:, ::2] = -100  # only some positions are masked-LM targets
    return transformers.BertForMaskedLM(cfg), batch


def t5():
    cfg = transformers.T5Config(
        vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
        num_heads=4, decoder_start_token_id=0, pad_token_id=0, dropout_rate=0.0,
    )  # fmt: skip
    batch = _text_batch()
    batch["labels"] = _text_batch(seed=2, seq=6)["labels"]
    return transformers.T5ForConditionalGeneration(cfg), batch


def vit():
    cfg = transformers.ViTConfig(
        image_size=32, patch_size=8, num_channels=3, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_labels=10,
    )  # fmt: skip
    gen = torch.Generator().manual_seed(1)
    batch = {
        "pixel_values": torch.randn(2, 3, 32, 32, generator=gen),
        "labels": torch.randint(0, 10, (2,), generator=gen),
    }
    return transformers.ViTForImageClassification(cfg), batch


def mamba():
    cfg = transformers.MambaConfig(
        vocab_size=VOCAB, hidden_size=64, state_size=8, num_hidden_layers=2, expand=2,
        conv_kernel=4, use_mambapy=False,
    )  # fmt: skip
    return transformers.MambaForCausalLM(cfg), _text_batch()


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """torchvision's resnet18 layout (stem, max pool, 4 stages of 2 basic blocks, global average
    pool) with narrower stages to keep the test fast, and the 3x3 stride-1 stem used for 32x32
    images: with the 7x7 stride-2 one the last stage's batch norm sees 1x1 maps, 4 values per
    channel, and three steps turn rounding-level differences (the CPU's own float32 gradients
    are 1e-4 off float64's) into different losses."""

    def __init__(self, widths=(8, 16, 32, 64), num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks += [BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w, 1)]
            cin = w
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, pixel_values, labels):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(pixel_values))), 3, 2, 1)
        x = F.adaptive_avg_pool2d(self.layers(x), 1).flatten(1)
        return F.cross_entropy(self.fc(x), labels)


def resnet18():
    gen = torch.Generator().manual_seed(1)
    batch = {
        "pixel_values": torch.randn(4, 3, 32, 32, generator=gen),
        "labels": torch.randint(0, 10, (4,), generator=gen),
    }
    return ResNet18(), batch


MODELS = {
    "llama": llama,
    "qwen3": qwen3,
    "mixtral": mixtral,
    "qwen3_moe": qwen3_moe,
    "gpt2": gpt2,
    "bert": bert,
    "t5": t5,
    "vit": vit,
    "mamba": mamba,
    "resnet18": resnet18,
}


def _loss(model, batch):
    out = model(**batch)
    return out if isinstance(out, torch.Tensor) else out.loss


def train(model, batch, device, autocast):
    model.to(device)
    batch = {k: v.to(device) for k, v in batch.items()}
    if isinstance(model, ResNet18):
        opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=autocast):
            loss = _loss(model, batch)
        loss.backward()
        opt.step()
        losses.append(loss.detach().float().cpu())
    return torch.stack(losses)


@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16_autocast"])
@pytest.mark.parametrize("name", list(MODELS))
def test_model_trains_like_cpu_without_fallbacks(name, autocast, clean_tracking):
    torch.manual_seed(0)
    cpu_model, batch = MODELS[name]()
    torch.manual_seed(0)
    model, _ = MODELS[name]()
    model.load_state_dict(cpu_model.state_dict())
    cpu_model.train()
    model.train()
    # Dropout would draw different masks on the two devices.
    for m in list(cpu_model.modules()) + list(model.modules()):
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    vtrn.clear_op_tracking()
    got = train(model, batch, "neuron", autocast)
    fallbacks = vtrn.get_fallback_ops()
    want = train(cpu_model, batch, "cpu", autocast)
    assert fallbacks == []
    if autocast:
        # neuron follows CUDA's autocast lists and the CPU its own: after two SGD steps the
        # ResNet's losses under the two policies drift apart (its float32 runs agree to 1e-6
        # at every step).
        compared = 2 if name == "resnet18" else STEPS
        torch.testing.assert_close(got[:compared], want[:compared], **AUTOCAST_TOL)
    else:
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("name", ["llama", "gpt2", "t5"])
def test_greedy_generate_gives_the_cpus_tokens_without_fallbacks(name, clean_tracking):
    """generate() (greedy, 20 new tokens) on a left-padded batch of two prompts: the padding
    mask reaches attention as a mask tensor (HF's sdpa attention)."""
    torch.manual_seed(0)
    cpu_model, _ = MODELS[name]()
    torch.manual_seed(0)
    model, _ = MODELS[name]()
    model.load_state_dict(cpu_model.state_dict())
    cpu_model.eval()
    model.eval().to("neuron")
    ids = _text_batch(seed=3, seq=6)["input_ids"]
    attention_mask = torch.ones_like(ids)
    if not model.config.is_encoder_decoder:
        ids[1, :2] = 0  # left padding, as decoder-only generation pads
        attention_mask[1, :2] = 0
    else:
        ids[1, -2:] = 0
        attention_mask[1, -2:] = 0
    kwargs = {"max_new_tokens": 20, "do_sample": False, "pad_token_id": 0}
    vtrn.clear_op_tracking()
    with torch.no_grad():
        got = model.generate(
            input_ids=ids.to("neuron"), attention_mask=attention_mask.to("neuron"), **kwargs
        )
        fallbacks = vtrn.get_fallback_ops()
        want = cpu_model.generate(input_ids=ids, attention_mask=attention_mask, **kwargs)
    assert fallbacks == []
    assert torch.equal(got.cpu(), want)
