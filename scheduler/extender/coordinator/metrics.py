"""The coordinator's Prometheus metrics, registered in a registry handed in (one per app, never the global one)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["CoordinatorMetrics"]

_SOLVE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_WAIT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0)


class _StateGauges(Collector):
    """Gangs by state, reservations held and watch events applied, read at scrape time (no bookkeeping to drift)."""

    def __init__(
        self,
        gangs_by_state: Callable[[], Mapping[str, int]],
        reservations: Callable[[], int],
        watch_events: Callable[[], Mapping[str, int]],
    ) -> None:
        self._gangs_by_state = gangs_by_state
        self._reservations = reservations
        self._watch_events = watch_events

    def collect(self) -> Iterator[Metric]:
        gangs = GaugeMetricFamily("grove_extender_gangs", "Gangs the extender tracks, by state.", labels=["state"])
        for state, count in sorted(self._gangs_by_state().items()):
            gangs.add_metric([state], count)
        yield gangs
        yield GaugeMetricFamily(
            "grove_extender_reservations",
            "Pods holding a reservation (planned or ready, not yet bound).",
            value=self._reservations(),
        )
        events = CounterMetricFamily(
            "grove_extender_watch_events",
            "Watch events decoded and applied to the extender's store, by kind (Node heartbeats that change "
            "nothing are skipped before decoding and not counted).",
            labels=["kind"],
        )
        for kind, count in sorted(self._watch_events().items()):
            events.add_metric([kind], count)
        yield events


class CoordinatorMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.plans = Counter(
            "grove_extender_plans_total", "Gang plans computed, by outcome.", ["outcome"], registry=registry
        )
        self.replans = Counter(
            "grove_extender_replans_total", "Plans dropped and recomputed, by cause.", ["cause"], registry=registry
        )
        self.floor_mismatches = Counter(
            "grove_extender_solver_floor_mismatches_total",
            "CP-SAT models that found no plan at or above the tier bound while the greedy held one; the greedy plan "
            "was used. Any count is a bug in the bound or the model: report it with the extender's log.",
            registry=registry,
        )
        self.solve_seconds = Histogram(
            "grove_extender_solve_seconds", "Time the solver took per plan.", buckets=_SOLVE_BUCKETS, registry=registry
        )
        self.bind_wait_seconds = Histogram(
            "grove_extender_bind_wait_seconds",
            "Time a ready member's bind call waited for its gang before it was answered.",
            buckets=_WAIT_BUCKETS,
            registry=registry,
        )
        self.bind_waits_expired = Counter(
            "grove_extender_bind_waits_expired_total",
            "Bind calls answered Error because their gang was still gathering (the member stays ready; the "
            "extender binds it when the gang is complete).",
            registry=registry,
        )
        self.binds = Counter(
            "grove_extender_binds_total",
            "Pod bindings the extender issued, by result: bound, gone (the pod is gone: re-planned), retry.",
            ["result"],
            registry=registry,
        )
        self.nominations = Counter(
            "grove_extender_nominations_total",
            'Pod nominatedNodeName writes (a planned node, or "" to clear one), by result: written, failed, not_sent '
            "(its pod's bind call came first).",
            ["result"],
            registry=registry,
        )
        self.preemption_vetoes = Counter(
            "grove_extender_preemption_vetoes_total",
            "Nodes removed from a preemption proposal because their victims would break a bound gang.",
            registry=registry,
        )
        self.filter_answers = Counter(
            "grove_extender_filter_answers_total",
            "Filter calls by answer: node (the planned node), refused (FailedNodes: kube-scheduler parks the pod), "
            "error (Error: kube-scheduler backs the pod off and asks again).",
            ["answer"],
            registry=registry,
        )
        self.filter_nominations = Counter(
            "grove_extender_filter_nominations_total",
            "Filter calls by what the pod's nominatedNodeName did: alone (kube-scheduler tried that node alone and "
            "passed only it: the nomination spared it the scan of every node), scanned (nominated, yet more nodes "
            "were passed: it came too late or the node did not fit), none (no nomination when kube-scheduler "
            "popped the pod).",
            ["nomination"],
            registry=registry,
        )
        self.queue_heads = Counter(
            "grove_extender_queue_heads_total",
            "Queue heads planned together (several waiting gangs at once); their gangs' plans count in plans_total.",
            registry=registry,
        )
        self.models = Counter(
            "grove_extender_models_total",
            "CP-SAT models solved (none when the greedy plan meets the lower bound), by path (head: a queue head of "
            "waiting gangs planned together; gang: one gang planned when its pod was asked about) and by whether "
            "the plan was proven optimal (false: the time limit ended the search, or the model saw only a "
            "neighbourhood).",
            ["path", "proven"],
            registry=registry,
        )
        self.model_seconds = Histogram(
            "grove_extender_model_seconds",
            "Time a plan took when it needed a CP-SAT model, the model included, by path.",
            ["path"],
            buckets=_SOLVE_BUCKETS,
            registry=registry,
        )
        self.preemptions = Counter(
            "grove_extender_preemptions_total",
            "Attempts to make room for a gang of higher priority, by outcome: yielded (reservations of gangs not "
            "started gave way, nothing evicted), evicting (lower-priority pods are being evicted), none (nothing "
            "below it could make room), abandoned (a PodDisruptionBudget refused, or victims never went).",
            ["outcome"],
            registry=registry,
        )
        self.evictions = Counter(
            "grove_extender_evictions_total",
            "Pods evicted for a gang of higher priority, by result: evicted, refused (a PodDisruptionBudget, at "
            "the dry run: nothing of that preemption is evicted), failed (retried while the gang waits).",
            ["result"],
            registry=registry,
        )
        self.reservations_expired = Counter(
            "grove_extender_reservations_expired_total", "Gang reservations dropped by their TTL.", registry=registry
        )

    def watch_state(
        self,
        *,
        gangs_by_state: Callable[[], Mapping[str, int]],
        reservations: Callable[[], int],
        watch_events: Callable[[], Mapping[str, int]],
    ) -> None:
        self.registry.register(_StateGauges(gangs_by_state, reservations, watch_events))

    def solved(self, path: str, parts: Mapping[str, float], seconds: float) -> None:
        """A plan's models (``objective_parts``: ``models`` built, ``optimal`` proven) and time, when it built one."""
        if parts.get("models"):
            self.models.labels(path, "true" if parts.get("optimal") else "false").inc(parts["models"])
            self.model_seconds.labels(path).observe(seconds)
