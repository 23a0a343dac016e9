"""Cluster snapshots: the file format (a Kubernetes ``List`` of Nodes, Pods and Grove objects), loading it bounded
and validated, writing it, recording one from a live cluster and scrubbing what it must not carry.

Owns: ``snapshot`` (the format, load and dump), ``files`` (reading any file a user names, bounded whatever the file
is), ``documents`` (the JSON/YAML text rules every user file goes through), ``record`` (listing a live cluster into
a snapshot) and ``scrub`` (the allowlist of what a recorded object keeps). Does not own: what a snapshot means for
planning (the extender's translation reads it) or the replay (``benchmarks.replay``). Imports ``api`` and
``scheduler.kube``; neither the extender nor the reconciler.
"""

from scheduler.snapshot.snapshot import (
    DURATION_ANNOTATION,
    MAX_DEPTH,
    MAX_SNAPSHOT_BYTES,
    Snapshot,
    SnapshotError,
    dump_snapshot,
    gc_paused,
    load_snapshot,
    parse_snapshot,
)

__all__ = [
    "DURATION_ANNOTATION",
    "MAX_DEPTH",
    "MAX_SNAPSHOT_BYTES",
    "Snapshot",
    "SnapshotError",
    "dump_snapshot",
    "gc_paused",
    "load_snapshot",
    "parse_snapshot",
]
