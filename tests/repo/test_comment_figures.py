"""Comments say why, not how much: no measured figure in a product comment or docstring.

A figure in a comment goes stale the day the code or the machine changes, and nothing reruns it. The reason stays in
the code, with the name of the benchmark that shows it; the figure lives beside the command that produced it, its
tree and its load (``docs/<benchmark>.md``, one page per benchmark, or ``benchmarks/results/``): ARCHITECTURE.md's
"their runs are recorded in docs/ and benchmarks/results/, never in code comments".

This test reads every comment and docstring of the product packages (``benchmarks/`` may describe what it measured,
tests may say what they expect) and flags a line with a figure in a unit measurements come in: a time (µs, ms,
"a millisecond", "took 12 s"), a rate (pods/s, "per second"), a share or multiple of a cost ("a tenth of the CPU",
"twice as fast", "3.5×"), a percentage, a size (KB, MiB …), a count of calls or cycles seen in a run. A bare number
is not a figure: a limit, a timeout, a count of nodes or a shape ("100 gangs × 8 pods") passes. Limits, defaults
and constants the code or Kubernetes sets that still read like a figure ("1 GiB", "80% average CPU") sit in
``ALLOWED`` below, each with why it is not a measurement.
"""

from __future__ import annotations

import io
import re
import tokenize
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PRODUCT = ("api", "scheduler", "placement", "topology")
"""The packages that ship (``pyproject.toml``'s packages, less ``benchmarks``)."""

_NUMBER = r"(?:~|about\s+)?(?<![\w/.`])\d[\d.,]*(?:\s*[–-]\s*\d[\d.,]*)?"
_SHARE = (
    r"\b(?:half|a\s+third|a\s+quarter|a\s+fifth|a\s+tenth|a\s+twentieth|twice|double|triple"
    r"|(?:\d[\d.,]*|two|three|four|five|six|seven|eight|nine|ten|a\s+hundred|several|many)\s+times)\b"
)
_COST = (
    r"\b(?:CPU|cost|costs|call|calls|bind|write|memory|as\s+long|as\s+fast|faster|slower|cheaper|costlier|seconds?"
    r"|size|decode|decoding|encode|encoding|loading)\b"
)
_COMPARED = r"(?:as|the|faster|slower|cheaper|costlier|more|less)\b"

FIGURES = {
    "a time": re.compile(rf"{_NUMBER}\s*(?:µs|us|ns|ms)\b|\bfew\s+(?:µs|ms|ns)\b"),
    "a time in words": re.compile(
        r"\b(?:\d[\d.,]*|a|few|about)\s+(?:milli|micro|nano)seconds?\b|\b(?:milli|micro|nano)seconds?\s+(?:per|at)\b"
    ),
    "a time taken": re.compile(
        rf"\b(?:took|takes|take|taking|spent|spends|lasted)\s+{_NUMBER}\s*(?:s|seconds?|min|minutes?|h|hours?)\b"
    ),
    "a rate": re.compile(
        rf"{_NUMBER}\s*(?:pods|gangs|calls|binds|writes|events|requests)?/s\b"
        rf"|{_NUMBER}\s+(?:\w+\s+){{0,2}}per\s+second\b"
    ),
    "a share or multiple of a cost": re.compile(rf"{_SHARE}[^.;:()]{{0,50}}?{_COST}"),
    # A multiple written as one: "3.5×", "0.43×)", "×10", "3-4x", "3.5 × faster". A product of two operands
    # ("100 gangs × 8 pods", "weight × 10", "8×8") is arithmetic, not a measurement.
    "a ratio": re.compile(
        rf"\d[\d.]*×(?!\d)|(?<![\d\w])×\d|\b\d[\d.]*x\b|{_NUMBER}\s*[×x]\s+{_COMPARED}"
        rf"|{_NUMBER}\s*(?:→|against|vs\.?)\s*{_NUMBER}\s*(?:µs|ms)?"
    ),
    "a percentage": re.compile(r"\d\s?%"),
    "a size": re.compile(rf"{_NUMBER}\s*(?:[kKMGT]i?B|bytes)\b"),
    "a count seen in a run": re.compile(
        rf"{_NUMBER}\s+(?:\w+\s+)?(?:cycles|calls|handshakes|round\s+trips|system\s+calls)\b"
        rf"|{_NUMBER}\s+(?:\w+\s+){{0,2}}per\s+(?:bound\s+)?(?:pod|call|write|binding|event|request)\b"
    ),
    "a figure beside CPU": re.compile(rf"{_NUMBER}[^.;]{{0,30}}\bCPU\b"),
}

ALLOWED: dict[tuple[str, str], str] = {
    ("api/extender.py", "= ×10"): "kube-scheduler's MaxNodeScore over MaxExtenderPriority: its API's constants",
    ("api/http/body.py", "~1.5 MB, etcd's object limit"): "etcd's request size limit, which bounds any stored object",
    ("scheduler/extender/translation/cluster_view.py", "1 MiB is plenty"): "MAX_LEVELS_FILE_BYTES, the limit itself",
    ("scheduler/kube/http.py", "kubelet at 80 % of an hour"): "when kubelet rotates a projected token: its own rule",
    ("scheduler/reconcile/desired/autoscale.py", "80% average CPU"): "an HPA's default target: a Kubernetes default",
    ("scheduler/snapshot/snapshot.py", "says otherwise: 1 GiB"): "MAX_SNAPSHOT_BYTES, the limit itself",
}
"""(file, text in the flagged line) → why that figure is not a measurement. Keep it short: a limit, a default or a
constant that the code, Kubernetes or a library sets, never a figure seen in a run."""


def comment_lines(source: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of every comment and docstring line of ``source``: comments, and strings that stand as
    a statement of their own (module, class and function docstrings, and the attribute docstrings after an
    assignment)."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    skipped = {tokenize.NL, tokenize.COMMENT}
    statement_start = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
    for index, token in enumerate(tokens):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
        elif token.type == tokenize.STRING:
            before = index - 1  # past the strings it is concatenated with: the statement's first token
            while before >= 0 and tokens[before].type in skipped | {tokenize.STRING}:
                before -= 1
            after = index + 1
            while after < len(tokens) and tokens[after].type in skipped | {tokenize.STRING}:
                after += 1
            stands_alone = before < 0 or tokens[before].type in statement_start
            ends_statement = after == len(tokens) or tokens[after].type in {tokenize.NEWLINE, tokenize.ENDMARKER}
            if stands_alone and ends_statement:
                for offset, line in enumerate(token.string.splitlines()):
                    yield token.start[0] + offset, line


def figures_in(line: str) -> list[str]:
    """What kind of measured figure ``line`` quotes, if any (the names of ``FIGURES``)."""
    return [kind for kind, pattern in FIGURES.items() if pattern.search(line)]


def figures_by_line(source: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line number, line, kinds) of every comment or docstring line of ``source`` where a figure starts. Lines in a
    row are read as one text, so a figure wrapped across two ("was a" / "third of the decode") is still found."""
    lines = list(comment_lines(source))
    start = 0
    while start < len(lines):
        end = start + 1
        while end < len(lines) and lines[end][0] == lines[end - 1][0] + 1:
            end += 1
        block = lines[start:end]
        offsets, text = [], ""
        for _, line in block:
            offsets.append(len(text))
            text += line.strip().lstrip("#").strip() + " "
        kinds: dict[int, list[str]] = {}
        for kind, pattern in FIGURES.items():
            for match in pattern.finditer(text):
                at = max(index for index, offset in enumerate(offsets) if offset <= match.start())
                kinds.setdefault(at, [])
                if kind not in kinds[at]:
                    kinds[at].append(kind)
        for at in sorted(kinds):
            yield block[at][0], block[at][1].strip(), kinds[at]
        start = end


def product_files(root: Path = REPO_ROOT) -> list[Path]:
    return sorted(path for package in PRODUCT for path in (root / package).rglob("*.py"))


def flagged(root: Path = REPO_ROOT) -> Iterator[tuple[str, int, str, list[str]]]:
    """(file, line number, line, kinds) of every comment or docstring line in the product that quotes a figure."""
    for path in product_files(root):
        name = path.relative_to(root).as_posix()
        for number, line, kinds in figures_by_line(path.read_text(encoding="utf-8")):
            yield name, number, line, kinds


def allowed_by(name: str, line: str) -> tuple[str, str] | None:
    return next((key for key in ALLOWED if key[0] == name and key[1] in line), None)


def unexplained(root: Path = REPO_ROOT) -> list[tuple[str, int, str, list[str]]]:
    """The flagged lines that no ``ALLOWED`` entry explains."""
    return [(name, number, line, kinds) for name, number, line, kinds in flagged(root) if not allowed_by(name, line)]


def test_product_is_the_packages_that_ship() -> None:
    """A package added to the distribution is product code here too, unless it is the benchmarks."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    shipped = {pattern.rstrip("*") for pattern in config["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert shipped - {"benchmarks"} == set(PRODUCT)
    assert len(product_files()) > 100, "found almost no product files: this test reads the tree wrong"


def test_no_product_comment_quotes_a_measurement() -> None:
    found = unexplained()
    assert not found, (
        "Comments say why, not how much (ARCHITECTURE.md: runs are recorded in docs/, never in code comments). These "
        "comment or docstring lines quote a figure:\n"
        + "\n".join(f"  {name}:{number}: {line}  [{', '.join(kinds)}]" for name, number, line, kinds in found)
        + "\nSay why the code is shaped this way and name the benchmark that shows it (e.g. ``benchmarks/"
        "bench_http2.py`` measures it; figures in docs/bench_http2.md); the number goes to docs/<benchmark>.md (or "
        "benchmarks/results/) with its command, tree and load. A limit, default or constant the code or Kubernetes "
        "sets is not a measurement: add it to ALLOWED in tests/repo/test_comment_figures.py with the reason."
    )


def test_every_allowed_figure_is_still_there() -> None:
    """An entry whose line went away is dropped, so the allowlist stays the short list of what is there."""
    used = {allowed_by(name, line) for name, _, line, _ in flagged()}
    assert not set(ALLOWED) - used, f"ALLOWED entries that match no flagged line: {sorted(set(ALLOWED) - used)}"


def test_a_figure_in_a_product_file_fails_and_a_reason_passes(tmp_path: Path) -> None:
    """The whole path, files to verdict, on a tree of two product files: one quoting a figure, one saying why."""
    (tmp_path / "api").mkdir()
    (tmp_path / "placement").mkdir()
    (tmp_path / "api" / "bad.py").write_text(
        '"""Decoding here is cheap."""\n\nTIMEOUT = 10.0  # decoding the Pod costs ~45 µs per event\n'
    )
    (tmp_path / "placement" / "good.py").write_text(
        '"""Bounds first: the model is skipped when the greedy plan meets them.\n\n'
        "A filter answers within kube-scheduler's 5 s httpTimeout (``benchmarks/bench_http2.py`` measures a call).\n"
        '"""\n\nLIMIT = 1 << 20  # one read at most\n'
    )
    assert unexplained(tmp_path) == [
        ("api/bad.py", 3, "# decoding the Pod costs ~45 µs per event", ["a time", "a count seen in a run"])
    ]


def test_a_figure_wrapped_across_lines_is_found_where_it_starts() -> None:
    source = (
        "# The rest of a Pod is never decoded: it was a\n"
        "# third of filter's decode.\n"
        "X = 1  # separate: 5 s\n"
        '"""Read as it arrives, 4\n'
        'MiB at most."""\n'
    )
    assert list(figures_by_line(source)) == [
        (1, "# The rest of a Pod is never decoded: it was a", ["a share or multiple of a cost"]),
        (4, '"""Read as it arrives, 4', ["a size"]),
    ]


def test_an_allowed_constant_passes_only_in_its_own_file() -> None:
    line = '"""Largest snapshot read, after decompression, unless ``X`` says otherwise: 1 GiB'
    assert figures_in(line) == ["a size"]
    assert allowed_by("scheduler/snapshot/snapshot.py", line)
    assert not allowed_by("scheduler/snapshot/files.py", line)


@pytest.mark.parametrize(
    "line",
    [
        "# decoding the Pod costs ~45 µs per event (benchmarks/bench_watch.py)",
        "# a filter with 1,008 names 180 → 127 µs",
        "# kube-scheduler through this extender manages 130-350 pods/s",
        "# 810 pods bound per second",
        "# these checks cost a tenth of a call's CPU",
        "# a twentieth of the server's CPU",
        "# decoding the rest of a Pod was a third of filter's decode",
        "# aiohttp cost twice the CPU per write",
        "# with collection on, loading took 3.5× as long",
        "# the HTTP/2 server is 3.5× faster",
        "# load a 10,000-node snapshot 3-4x faster",
        "# the ratio went from 0.43× to 0.67×",
        "# a hop to another thread would double the CPU of a bind",
        "# the Pod model is ~8 KB in memory",
        "# 0.8 handshakes per bound pod",
        "# 1.4 ms per pod",
        "# ~2,000 pods/s",
        "# the dump is 12 MB",
        "# 2,400 pods bind whole at 89 s (7,139 cycles), but 6,858 bind calls",
        "# a 9 MB NodeList takes half a second",
        "# decoded in about a millisecond",
        "# building it costs milliseconds per thousand nodes",
        "# 0.25 against 0.13 ms per binding",
        "# the watch used 40% of a core",
        "# a steady pass took 1.2 s",
        "# three times slower than deepcopy",
        "# loading needs several times the file's size in memory",
    ],
)
def test_a_measured_figure_is_flagged(line: str) -> None:
    assert figures_in(line), f"not flagged: {line}"


@pytest.mark.parametrize(
    "line",
    [
        "# kube-scheduler's extender httpTimeout is 5 s: a write that has not answered in 4 s has failed",
        "# members arrive in more than one pass (backoff, retries): allow twice the ideal",
        "# a quarter of the connection's flow-control window",
        "# kube-scheduler backs the pod off for 1 s, 2 s, … 10 s",
        "# the whole gang goes: nothing is left half-running",
        "# Unique per call, like client-go's name, plus a sequence for two events in one microsecond.",
        "# bounds over 10,000 nodes cost a few bincounts, not loops",
        "# a CPU clique is skipped; millicores for CPU",
        "# its alphabet[ord(c) % 27]",
        "# 100 gangs × 8 pods on 1,000 nodes",
        "# placementScore = weight × 10, an 8×8 grid",
        "# at most 256 streams in flight, idle keep-alive 120 s",
        "# a pass that has not moved in 5 minutes is stuck",
        "# client-go's QPS 5 and burst 10; 0x7f is DEL",
        "# the client's default pool (five connections per CPU)",
        "# the same few quantities tens of thousands of times, loading a snapshot",
    ],
)
def test_a_limit_or_a_constant_is_not_flagged(line: str) -> None:
    assert not figures_in(line), f"flagged: {line} as {figures_in(line)}"


def test_comments_and_docstrings_are_read_code_is_not() -> None:
    source = (
        '"""Module: 5 µs."""\n'
        "X = 1\n"
        '"""Attribute: 6 µs."""\n'
        "def f() -> str:\n"
        '    """Function: 7 µs."""\n'
        '    return "code: 8 µs"  # comment: 9 µs\n'
        'print("code: 10 µs")\n'
        'Y = ("code: 11 µs"\n'
        '     "code: 12 µs")\n'
        'Z = "code: 13 µs" "code: 14 µs"\n'
    )
    assert [text for _, text in comment_lines(source)] == [
        '"""Module: 5 µs."""',
        '"""Attribute: 6 µs."""',
        '"""Function: 7 µs."""',
        "# comment: 9 µs",
    ]
