"""The internals ``api/http/fences/`` names are named nowhere else in the product: a reach into uvicorn's, h2's,
hpack's, hyperframe's or the event loops' internals outside its fence fails here, naming the file and the name."""

from __future__ import annotations

import ast

from tests.conftest import REPO_ROOT

FENCES = REPO_ROOT / "api" / "http" / "fences"
PRIVATE_MODULES = ("uvicorn.protocols", "uvicorn.server", "h2.utilities", "h2.stream", "h2.frame_buffer", "hpack.table")
FENCED_MODULES = ("hyperframe",)  # every use of it is a reach into its internals
PRIVATE_ATTRIBUTES = {
    # uvicorn
    "capture_signals",
    "_log_started_message",
    "should_exit",
    "force_exit",
    "get_loop_factory",
    "send_400_response",
    "server_state",
    # h2, hpack
    "decoder",
    "encoder",
    "local_settings",
    "header_table",
    "resized",
    # hyperframe
    "__repr__",
    # the event loops' TLS protocols, fed by hand
    "get_buffer",
    "buffer_updated",
}


def _product_files() -> list[str]:
    roots = [REPO_ROOT / name for name in ("api", "scheduler", "placement", "topology")]
    return sorted(
        str(path.relative_to(REPO_ROOT)) for root in roots for path in root.rglob("*.py") if FENCES not in path.parents
    )


def _reaches(path: str) -> list[str]:
    tree = ast.parse((REPO_ROOT / path).read_text(), path)
    found = []
    for node in ast.walk(tree):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        for module in modules:
            if module.startswith(PRIVATE_MODULES) or module.split(".")[0] in FENCED_MODULES:
                found.append(f"import {module}")
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
            found.append(f".{node.attr} (line {node.lineno})")
    return found


def test_no_library_internal_is_named_outside_its_fence() -> None:
    reaches = {path: found for path in _product_files() if (found := _reaches(path))}
    assert not reaches, f"reaches into a library's internals outside api/http/fences/ (move them there): {reaches}"
