"""``torch_neuronx.streams``: ``Stream`` and ``Event`` of the ``neuron`` device (vtrn's
``torch.neuron.Stream`` and ``torch.neuron.Event``)."""

from vtrn.neuron.streams import Event, Stream

__all__ = ["Event", "Stream"]
