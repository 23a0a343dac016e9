"""Kubernetes' syntax rules for names, labels, env vars and Go durations, as the API server applies them.

Kept apart from ``validation`` (which holds Grove's rules) because they are Kubernetes facts, not Grove's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "FieldError",
    "dns_subdomain_error",
    "env_name_error",
    "go_duration_seconds",
    "label_value_error",
    "qualified_name_error",
]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class FieldError:
    """One broken rule: the JSON path of the field (``spec.template.cliques[1].spec.minAvailable``) and the rule."""

    path: str
    rule: str

    def __str__(self) -> str:
        # Paths and rules carry the user's own keys and values: a key holding a newline must not break the one-line
        # error a person or a log parser reads.
        return _printable(f"{self.path}: {self.rule}")


def _printable(text: str) -> str:
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def dns_subdomain_error(value: str) -> str | None:
    if not value:
        return "must not be empty"
    if len(value) > 253:
        return f"must be at most 253 characters (got {len(value)})"
    if not _DNS_SUBDOMAIN.match(value):
        return "must be a DNS subdomain: lower-case alphanumerics, '-' or '.', starting and ending alphanumeric"
    return None


def qualified_name_error(key: str) -> str | None:
    """A label or annotation key: ``[prefix/]name``, prefix a DNS subdomain, name ≤ 63 characters."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or dns_subdomain_error(prefix)):
        return f"key {key!r}: prefix must be a DNS subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return f"key {key!r}: name part must be 1–63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    return None


def label_value_error(value: str) -> str | None:
    if value == "":
        return None
    if len(value) > 63 or not _QUALIFIED_NAME.match(value):
        return f"value {value!r}: must be ≤ 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    return None


def env_name_error(name: str) -> str | None:
    if not _ENV_NAME.match(name):
        return f"{name!r} is not a valid environment variable name (letters, digits, '_', '-', '.'; no leading digit)"
    return None


def go_duration_seconds(text: str) -> float | None:
    """Parse a Go ``time.Duration`` string (``4h``, ``1h30m``, ``-5s``, ``0``); ``None`` if it is not one."""
    body = text[1:] if text[:1] in "+-" else text
    sign = -1.0 if text.startswith("-") else 1.0
    if body == "0":
        return 0.0
    if not body:
        return None
    total = 0.0
    position = 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    return sign * total if position == len(body) else None
