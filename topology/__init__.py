"""The cluster as a graph: topology levels (zone → block → rack/NVLink domain → host → GPU), the mapping from
node-label keys to levels, domain lookups, free capacity per domain and distances.

Owns: pure data structures over node names, labels and capacity vectors. Does not own: Kubernetes objects, I/O,
or any scheduling decision. Imports nothing of ours.
"""

from topology.graph import HostSpec, Topology
from topology.levels import DEFAULT_LEVELS, HOST_LEVEL, Level, levels_from_pairs

__all__ = ["DEFAULT_LEVELS", "HOST_LEVEL", "HostSpec", "Level", "Topology", "levels_from_pairs"]
