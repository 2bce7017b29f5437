"""A tiny HF Llama trains and generates on neuron without a single CPU fallback, with the CPU's
loss and tokens (arange, cat of an empty cache, argmax, cumsum, isin, bitwise ops, max and bool
mul were the ops that used to fall back)."""

import torch
import transformers

import vtrn


def tiny_llama():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return transformers.LlamaForCausalLM(cfg)


def test_llama_train_step_and_generate_are_fallback_free(clean_tracking):
    cpu_model = tiny_llama()
    model = tiny_llama()
    model.load_state_dict(cpu_model.state_dict())
    model.to("neuron")
    ids = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(1))
    vtrn.clear_op_tracking()
    loss = model(input_ids=ids.to("neuron"), labels=ids.to("neuron")).loss
    loss.backward()
    assert vtrn.get_fallback_ops() == []
    torch.testing.assert_close(loss.cpu(), cpu_model(input_ids=ids, labels=ids).loss)

    model.eval()
    cpu_model.eval()
    prompt = ids[:1, :5]
    vtrn.clear_op_tracking()
    with torch.no_grad():
        out = model.generate(
            prompt.to("neuron"), max_new_tokens=20, do_sample=False, pad_token_id=0
        )
        expected = cpu_model.generate(prompt, max_new_tokens=20, do_sample=False, pad_token_id=0)
    assert vtrn.get_fallback_ops() == []
    assert torch.equal(out.cpu(), expected)
