"""Quantities parse the way apimachinery parses them, and round up to the units kube-scheduler counts."""

from __future__ import annotations

from fractions import Fraction

import pytest

from api.quantity import INT64_MAX, QuantityError, check_units, maximum_units, parse_quantity, resource_units


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("1", Fraction(1), id="plain"),
        pytest.param("500m", Fraction(1, 2), id="milli"),
        pytest.param("0.1", Fraction(1, 10), id="decimal-fraction"),
        pytest.param(".5", Fraction(1, 2), id="leading-dot"),
        pytest.param("16Gi", Fraction(16 * 2**30), id="binary-gi"),
        pytest.param("1Ki", Fraction(1024), id="binary-ki"),
        pytest.param("2k", Fraction(2000), id="decimal-k"),
        pytest.param("3M", Fraction(3 * 10**6), id="decimal-mega"),
        pytest.param("1e3", Fraction(1000), id="exponent"),
        pytest.param("1E-2", Fraction(1, 100), id="negative-exponent"),
        pytest.param("250u", Fraction(250, 10**6), id="micro"),
        pytest.param("7n", Fraction(7, 10**9), id="nano"),
        pytest.param("+4", Fraction(4), id="explicit-plus"),
        pytest.param("1.5Gi", Fraction(3 * 2**29), id="fractional-binary"),
        pytest.param(" 8 ", Fraction(8), id="surrounding-space"),
    ],
)
def test_parse_quantity(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


def test_numbers_are_accepted_as_quantities() -> None:
    # YAML snapshots carry bare numbers: `nvidia.com/gpu: 8`, `cpu: 0.5`.
    assert parse_quantity(8) == 8
    assert parse_quantity(0.5) == Fraction(1, 2)


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("", id="empty"),
        pytest.param("abc", id="letters"),
        pytest.param("1Gb", id="wrong-suffix"),
        pytest.param("1 Gi", id="inner-space"),
        pytest.param("--1", id="double-sign"),
        pytest.param("1ki", id="lower-case-binary"),
        pytest.param(True, id="bool"),
        pytest.param(float("nan"), id="nan"),
        pytest.param(float("inf"), id="inf"),
        pytest.param("1e999999999", id="huge-exponent"),
        pytest.param(None, id="null"),
        pytest.param({"a": 1}, id="object"),
        pytest.param([1], id="list"),
    ],
)
def test_bad_quantities_are_refused(bad: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("resource", "text", "expected"),
    [
        pytest.param("cpu", "500m", 500, id="cpu-millicores"),
        pytest.param("cpu", "2", 2000, id="cpu-whole"),
        pytest.param("cpu", "0.0001", 1, id="cpu-rounds-up"),  # 0.1 millicore → 1, never 0
        pytest.param("memory", "16Gi", 16 * 2**30, id="memory-bytes"),
        pytest.param("memory", "1500m", 2, id="memory-rounds-up"),  # 1.5 bytes → 2
        pytest.param("nvidia.com/gpu", "8", 8, id="gpu-count"),
        pytest.param("pods", "110", 110, id="pods"),
    ],
)
def test_resource_units(resource: str, text: str, expected: int) -> None:
    assert resource_units(resource, text) == expected


def test_equal_quantities_in_different_spellings_agree() -> None:
    assert resource_units("cpu", "0.1") == resource_units("cpu", "100m") == 100
    assert resource_units("memory", "1Gi") == resource_units("memory", "1073741824")


@pytest.mark.parametrize(
    ("resource", "value", "rule"),
    [
        pytest.param("nvidia.com/gpu", "1e40", "64-bit", id="gpu-1e40"),
        pytest.param("memory", "9Ei", "64-bit", id="memory-9Ei"),  # 9 × 2**60 > 2**63 - 1
        pytest.param("cpu", "12345678901234567890", "64-bit", id="cpu-20-digits"),
        pytest.param("cpu", "9223372036854775", "sane maximum", id="cpu-millicores-within-int64"),
        pytest.param("nvidia.com/gpu", "4097", "sane maximum", id="gpu-just-above"),
        pytest.param("memory", "300Ti", "sane maximum", id="memory-above-256Ti"),
        pytest.param("example.com/widget", "1Pi", "sane maximum", id="extended-above-512Ti"),
        pytest.param("nvidia.com/gpu", "-4", "negative", id="negative"),
        pytest.param("cpu", -1, "negative", id="negative-number"),
    ],
)
def test_amounts_beyond_a_sane_maximum_or_negative_are_refused(resource: str, value: str | int, rule: str) -> None:
    with pytest.raises(QuantityError, match=rule):
        check_units(resource, value)


@pytest.mark.parametrize(
    ("resource", "value"),
    [
        pytest.param("nvidia.com/gpu", "4096", id="gpu-at-maximum"),
        pytest.param("memory", "32Ti", id="largest-machine-memory"),
        pytest.param("cpu", "1920", id="largest-machine-cpu"),
        pytest.param("pods", "110", id="kubelet-default-pods"),
        pytest.param("nvidia.com/gpu", "0", id="zero"),
    ],
)
def test_real_amounts_pass(resource: str, value: str) -> None:
    assert check_units(resource, value) == resource_units(resource, value)


def test_sums_over_a_large_cluster_stay_inside_64_bits() -> None:
    # Domain bounds and CP-SAT capacity rows add one resource over every node: 10,000 nodes at the maximum.
    for resource in ("cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage", "example.com/widget"):
        assert maximum_units(resource) * 10_000 <= INT64_MAX, resource
