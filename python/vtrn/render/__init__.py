"""Presentation of vtrn's models: text reports, JSON, pictures (SVG/PNG), generated code, and
byte and time formatting. Each module takes the typed results of ``vtrn.topology``,
``vtrn.plan`` or ``vtrn.ops`` and never computes a model value itself; nothing here imports
torch or the command line.

- ``units``: bytes and seconds;
- ``canvas``: a drawing written as SVG or PNG;
- ``topology``, ``topology_pictures``: ``vtrn topo`` and ``vtrn mesh``;
- ``mesh_code``: the Python that builds a DeviceMesh with a given placement;
- ``plan``: ``vtrn plan``;
- ``ops``: ``vtrn ops`` and docs/ops.md.
"""
