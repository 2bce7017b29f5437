"""``torch_neuronx.distributed``: the ``neuron`` c10d backend (vtrn's; registered when torch
loads vtrn), so ``dist.init_process_group("neuron")`` works after ``import torch_neuronx`` as
after ``import torch``."""

from vtrn.distributed import BACKEND, modeled_collective_seconds, register

register()

__all__ = ["BACKEND", "modeled_collective_seconds"]
