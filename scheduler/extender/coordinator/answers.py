"""Reasons as the answers carry them: the answer to a request stays within a bound that follows from the request's
(``--max-body-bytes``), whatever the request names.

A filter refusal names every node it was asked about in ``FailedNodes``, each with the refusal's reason. Repeated on
every node, the reason would make the answer the node count times the reason's length, however short the names: a
request of many short names would be answered many times over. So the reason is written in full on the first nodes
only, as long as their reasons stay within ``FULL_REASONS_BYTES`` (always on the first), and every other node is
refused with ``SHORT_REASON``. Every node asked about stays in ``FailedNodes``, so kube-scheduler reads each one as
Unschedulable, as before: a candidate for its preemption (a node left out of both maps would read as
UnschedulableAndUnresolvable and drop out of it). The pod's FailedScheduling event counts the nodes per reason, so
it still shows the reason, on fewer of the nodes. A reason longer than ``REASON_CHARS`` is cut: kube-scheduler cuts
the event's whole message at that length anyway (``NoteLengthLimit``), and a reason built from the cluster (a gang's
group names) has no bound of its own.

The bound, read off the JSON each answer is written as. pydantic never writes a string longer than a request can
spell it: it escapes quotes, backslashes and control characters only, which a request must escape too. A name and
the separator after it take at least three bytes of the request (``"",``); filter and preempt answer a node named
twice once, prioritize twice:

- filter: per node, its name, a colon, a reason and a separator; a short reason adds its own JSON and the colon,
  at most ``FILTER_GROWTH - 1`` times the name's share of the request; the full reasons add at most
  ``FULL_REASONS_BYTES`` (or one cut reason, if that alone is longer); an ``Error`` is one cut reason.
- prioritize: ``{"Host": name, "Score": n}`` per node asked about, the wire format's own; the braces and keys add
  at most ``PRIORITIZE_GROWTH - 1`` times the name's share. Unchanged here: kube-scheduler gives a node the answer
  leaves out no score and no random tie-break, so leaving out the nodes scored 0 would change its choices.
- preempt: kube-scheduler's proposal less the vetoed nodes, every node and victim as the request named it, with the
  defaults written out (a node's ``{}`` is answered ``{"Pods":[],"NumPDBViolations":0}``), at most
  ``PREEMPT_GROWTH`` times the node's share.
- bind: one cut reason.

Each answer is then at most its verb's growth times ``len(request)``, plus ``ANSWER_SLACK``. NodeList mode's
accepted node is the exception: it is written back as the extender read it, defaults included.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

from pydantic_core import to_json

__all__ = [
    "ANSWER_SLACK",
    "CUT",
    "FILTER_GROWTH",
    "FULL_REASONS_BYTES",
    "PREEMPT_GROWTH",
    "PRIORITIZE_GROWTH",
    "REASON_CHARS",
    "REASON_SLACK",
    "SHORT_REASON",
    "capped",
    "failed_nodes",
]

REASON_CHARS = 1024
"""kube-scheduler's ``NoteLengthLimit``: the most of a reason its FailedScheduling event can show."""

CUT = " ..."
"""What ends a cut reason, as kube-scheduler ends a cut event message."""

SHORT_REASON = "refused"
"""The reason on the nodes past ``FULL_REASONS_BYTES``: a few characters, since it may be written on every node."""

FULL_REASONS_BYTES = 1 << 20
"""The full reasons' share of a refusal: room for a reason of a couple of hundred characters on each of 5,000 nodes,
the largest cluster Kubernetes supports, so that a real kube-scheduler's request keeps it on every node."""

FILTER_GROWTH = 5
PRIORITIZE_GROWTH = 8
PREEMPT_GROWTH = 6
"""How many times its request's length an answer may be, beyond ``ANSWER_SLACK``, by verb (derived above)."""
REASON_SLACK = 8 * REASON_CHARS
"""One cut reason written with every character escaped, and an answer's keys."""

ANSWER_SLACK = FULL_REASONS_BYTES + REASON_SLACK
"""What an answer may hold beyond its verb's growth: the full reasons of a refusal, or one cut reason."""


def capped(reason: str) -> str:
    """``reason``, cut to ``REASON_CHARS``."""
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - len(CUT)] + CUT


def failed_nodes(names: Iterable[str], reason: str, *, budget: int = FULL_REASONS_BYTES) -> dict[str, str]:
    """Every node of ``names`` → ``reason`` (cut), on the first nodes while their reasons fit ``budget`` bytes of
    JSON, and ``SHORT_REASON`` on the rest."""
    reason = capped(reason)
    full = max(1, budget // (len(to_json(reason)) + 1))
    failed = dict.fromkeys(names, SHORT_REASON)
    for name in islice(failed, full):
        failed[name] = reason
    return failed
