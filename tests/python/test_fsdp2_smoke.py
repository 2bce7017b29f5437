"""FSDP2 in one process (world size 1, gloo): shard, unshard through resizePrivateUse1Bytes,
and match the CPU model's forward and gradients."""

from conftest import run_python


def test_fsdp2_shards_and_unshards_on_neuron():
    result = run_python(
        """
        import warnings
        warnings.filterwarnings("ignore")
        import torch, torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        dist.init_process_group("cpu:gloo,neuron:gloo", store=dist.HashStore(), rank=0, world_size=1)
        mesh = init_device_mesh("neuron", (1,))
        torch.manual_seed(0)
        make = lambda: torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        model, ref = make(), make()
        ref.load_state_dict(model.state_dict())
        model.to("neuron")
        for layer in (model[0], model[2]):
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)

        # Parameters are DTensors on neuron; FSDP2 frees the unsharded storage after forward.
        assert all(type(p).__name__ == "DTensor" and p.device.type == "neuron" for p in model.parameters())
        x = torch.randn(5, 8)
        out = model(x.to("neuron"))
        freed = [fp._unsharded_param.untyped_storage().size() == 0
                 for fp in model[0]._get_fsdp_state()._fsdp_param_group.fsdp_params]
        print("freed after forward:", all(freed))
        out.sum().backward()
        expected = ref(x)
        expected.sum().backward()
        print("forward matches:", torch.allclose(out.cpu(), expected, rtol=1e-6, atol=1e-6))
        grads = [torch.allclose(p.grad.full_tensor().cpu(), q.grad, rtol=1e-6, atol=1e-6)
                 for p, q in zip(model.parameters(), ref.parameters())]
        print("grads match:", all(grads))
        # A second step re-allocates the freed storage and still matches.
        out2 = model(x.to("neuron"))
        print("second forward matches:", torch.allclose(out2.cpu(), ref(x), rtol=1e-6, atol=1e-6))
        dist.destroy_process_group()
        """,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert lines == [
        "freed after forward: True",
        "forward matches: True",
        "grads match: True",
        "second forward matches: True",
    ], result.stdout
