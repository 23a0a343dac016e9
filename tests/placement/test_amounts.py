"""``placement.amounts``: amounts in messages read as Kubernetes writes them, and mean what the parser reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.quantity import resource_units
from placement.amounts import amount, quantity


@pytest.mark.parametrize(
    ("resource", "units", "written"),
    [
        pytest.param("cpu", 1000, "1 cpu", id="one-core"),  # the message that said "1000 cpu"
        pytest.param("cpu", 500, "500m cpu", id="half-a-core"),
        pytest.param("cpu", 1500, "1500m cpu", id="a-core-and-a-half"),  # kubectl prints 1500m, not 1.5
        pytest.param("cpu", 0, "0 cpu", id="no-cpu"),
        pytest.param("memory", 8 * 2**30, "8Gi memory", id="binary-memory"),
        pytest.param("memory", 1536 * 2**20, "1536Mi memory", id="not-whole-gibibytes"),
        pytest.param("memory", 10**9, "1G memory", id="decimal-memory"),
        pytest.param("memory", 1001, "1001 memory", id="odd-bytes"),
        pytest.param("ephemeral-storage", 100 * 2**30, "100Gi ephemeral-storage", id="storage"),
        pytest.param("hugepages-2Mi", 2**21, "2Mi hugepages-2Mi", id="hugepages"),
        pytest.param("nvidia.com/gpu", 4, "4 nvidia.com/gpu", id="gpus"),
        pytest.param("nvidia.com/gpu", 2048, "2048 nvidia.com/gpu", id="a-count-is-never-suffixed"),
        pytest.param("pods", 110, "110 pods", id="pods"),
    ],
)
def test_amounts_read_as_kubernetes_writes_them(resource: str, units: int, written: str) -> None:
    assert amount(resource, units) == written


@given(
    resource=st.sampled_from(["cpu", "memory", "ephemeral-storage", "hugepages-1Gi", "nvidia.com/gpu", "pods"]),
    units=st.one_of(st.integers(0, 2**48), st.integers(0, 4096).map(lambda n: n * 2**30)),
)
def test_what_a_message_says_parses_back_to_the_same_units(resource: str, units: int) -> None:
    """The notation here and the convention of ``api.quantity`` (millicores for cpu, bytes, counts) agree."""
    assert resource_units(resource, quantity(resource, units)) == units
