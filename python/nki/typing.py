"""nki.typing: tensor annotations (``nt.tensor[128, 512]``, ``nt.mutable_tensor``).

Annotations document shapes; the interpreter does not need them, so they are accepted as is.
"""


class _Annotation:
    def __init__(self, name, shape=None):
        self._name = name
        self.shape = shape

    def __getitem__(self, shape):
        return _Annotation(self._name, shape if isinstance(shape, tuple) else (shape,))

    def __call__(self, *args, **kwargs):
        return self

    def __repr__(self):
        return f"nt.{self._name}" + (f"[{', '.join(map(str, self.shape))}]" if self.shape else "")


tensor = _Annotation("tensor")
mutable_tensor = _Annotation("mutable_tensor")
scalar = _Annotation("scalar")
