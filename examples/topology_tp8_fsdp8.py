"""TP8 x FSDP8 on one trn2.48xlarge: why the default mesh fails, and a placement that works.

Run: python examples/topology_tp8_fsdp8.py   (no torch needed)
Same as: vtrn mesh --shape 8,8 --names dp,tp [--placement auto] [--code]
"""

from vtrn.topology import Cluster

cluster = Cluster("trn2.48xlarge", lnc=2)
shape, names = [8, 8], ["dp", "tp"]

default = cluster.analyze_mesh(shape, names)
for axis in default.axes:
    print(f"default {axis.name}: first group {axis.groups[0]} routable={axis.routable}")
print(default.axes[0].error)

found = cluster.search_placement(shape, names)
print("\nsearched chip order:", found.chip_order)
report = cluster.analyze_mesh(shape, names, found.placement)
for axis in report.axes:
    estimate = axis.estimates[256 << 20]
    print(
        f"{axis.name}: first group {axis.groups[0]}, {axis.collective} of 256 MiB: "
        f"{estimate.algorithm} {estimate.seconds * 1e3:.3f} ms"
    )
