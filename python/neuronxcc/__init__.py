"""The legacy ``neuronxcc`` namespace, as far as NKI kernels use it (``neuronxcc.nki``).

vtrn ships no Neuron compiler; ``from neuronxcc import nki`` gives vtrn's NKI interpreter with
the legacy (NKI 0.1) API.
"""
