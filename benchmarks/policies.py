"""The policy names ``grove-extender bench`` accepts beyond ``placement.POLICIES``, and its default list: read both by
the command's arguments (``benchmarks.cli``) and by what runs them (``benchmarks.command``)."""

DEFAULT_POLICIES = "cpsat,topology-greedy,gang-best-fit,spread,first-fit"
BATCH = "cpsat-batch"  # queue-aware planning: the waiting gangs' head planned in one model (placement.batch)
