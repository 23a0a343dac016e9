"""The end-to-end suite's set-up: one real control plane for the session, a namespace per test.

The suite runs only when selected (``make e2e``, i.e. ``pytest -m e2e tests/e2e``) and when ``KUBEBUILDER_ASSETS``
names the binaries; otherwise every test skips with one line saying how to run it. ``make test`` never starts a
control plane.

Logs: the control plane's folder (``E2E_LOGS`` if set, else pytest's tmp dir) keeps every component's log; a failed
test's report ends with the tail of each. Figures the scenarios measure are printed at the end of the run and
written to ``figures.txt`` there.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.controlplane.assets import Assets, find_assets
from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.nodes import gpu_nodes
from tests.e2e.reads import clear_namespace

E2E = Path(__file__).parent
NODES = 1008  # 56 NVLink domains of 18 nodes × 4 GPUs: the scale scenarios' cluster
_FIGURES = pytest.StashKey[list[str]]()
_PLANE = pytest.StashKey[ControlPlane]()
_BODY_END = pytest.StashKey[dict[Path, int]]()  # the shared logs' sizes when a scenario's body ended
# An RBAC denial: the API server's message always names the user ("pods is forbidden: User \"…\" cannot list …");
# an admission policy's denial says "forbidden" too, but names the policy instead.
_FORBIDDEN = re.compile(r'forbidden: User "|HTTP 403')
_SHARED_LOGS = ("extender", "reconciler", "kube-scheduler", "default-scheduler", "initc-")
_numbers = itertools.count(1)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_FIGURES] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [item for item in items if E2E in Path(str(item.path)).parents]
    if not ours:
        return
    selected = "e2e" in (config.option.markexpr or "")
    found = find_assets()
    reason = (
        "e2e: starts a real control plane; run `make e2e` (with KUBEBUILDER_ASSETS set)"
        if not selected
        else f"e2e: {found}"
        if isinstance(found, str)
        else None
    )
    for item in ours:
        item.add_marker(pytest.mark.e2e)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def assets() -> Assets:
    found = find_assets()
    if isinstance(found, str):
        pytest.skip(f"e2e: {found}")
    return found


@pytest.fixture(scope="session")
def control_plane(
    assets: Assets, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[ControlPlane]:
    folder = Path(os.environ["E2E_LOGS"]) if os.environ.get("E2E_LOGS") else tmp_path_factory.mktemp("control-plane")
    started = time.monotonic()
    with ControlPlane.start(assets, folder, nodes=gpu_nodes(NODES)) as plane:
        request.config.stash[_PLANE] = plane
        record(request.config, f"control plane up with {NODES} nodes in {time.monotonic() - started:.1f} s ({folder})")
        yield plane


def record(config: pytest.Config, line: str) -> None:
    config.stash[_FIGURES].append(line)


@pytest.fixture
def figure(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Lines a scenario measured; printed in the run's summary."""
    lines: list[str] = []
    yield lines
    for line in lines:
        record(request.config, f"{request.node.name}: {line}")


@pytest.fixture
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace (with its ``default`` ServiceAccount), emptied afterwards: there is no namespace
    controller to delete one, so its objects are deleted one kind at a time."""
    name = f"e2e-{next(_numbers)}"
    control_plane.ensure_namespace(name)
    yield name
    clear_namespace(control_plane, name)


def _log_sizes(plane: ControlPlane) -> dict[Path, int]:
    return {path: path.stat().st_size for path in plane.folder.glob("*.log") if path.name.startswith(_SHARED_LOGS)}


@pytest.fixture(autouse=True)
def no_forbidden(request: pytest.FixtureRequest) -> Iterator[None]:
    """No component meets a 403 during any scenario run under the shipped RBAC: every call it makes is allowed."""
    plane = request.config.stash.get(_PLANE, None)
    if plane is None or request.node.get_closest_marker("forbidden_expected"):
        yield
        return
    before = _log_sizes(plane)
    yield
    found = []
    # An init container of a pod being torn down meets its Role gone (deleted with its PodCliqueSet, as garbage
    # collection would): only what the initc logs wrote while the scenario itself ran counts.
    body_end = request.node.stash.get(_BODY_END, {})
    for path, size in _log_sizes(plane).items():
        if path.name.startswith("initc-"):
            size = body_end.get(path, before.get(path, 0))
        start = before.get(path, 0)
        with path.open("rb") as log:
            log.seek(start)
            text = log.read(max(size - start, 0)).decode(errors="replace")
        found += [f"{path.name}: {line}" for line in text.splitlines() if _FORBIDDEN.search(line)]
    assert not found, "403 under the shipped RBAC:\n" + "\n".join(found[:20])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield
    plane = item.config.stash.get(_PLANE, None)
    if plane is not None:
        item.stash[_BODY_END] = _log_sizes(plane)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    plane = item.config.stash.get(_PLANE, None)
    if plane is None or not report.failed or E2E not in Path(str(item.path)).parents:
        return
    for name in ("extender", "reconciler", "kube-scheduler", "default-scheduler"):
        logs = sorted(plane.folder.glob(f"{name}*.log"), key=lambda p: p.stat().st_mtime)
        if logs:
            tail = logs[-1].read_text(errors="replace").splitlines()[-25:]
            report.sections.append((f"{logs[-1].name} (last 25 lines)", "\n".join(tail)))
    report.sections.append(("control plane folder", str(plane.folder)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(_FIGURES, [])
    if not lines:
        return
    terminalreporter.section("e2e figures")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    for line in [*lines, f"load average at the end: {load}"]:
        terminalreporter.write_line(line)
    plane = config.stash.get(_PLANE, None)
    if plane is not None:
        (plane.folder / "figures.txt").write_text("\n".join([*lines, f"load average at the end: {load}"]) + "\n")
