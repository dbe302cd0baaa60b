"""SLURM's compact host-list syntax, as ``scontrol show hostnames`` expands it."""

from __future__ import annotations

import pytest

from accel_abstraction.distributed.slurm import (
    NodeListError,
    expand_nodelist,
    first_host,
    parse_tasks_per_node,
)


@pytest.mark.parametrize(
    ("nodelist", "hosts"),
    [
        ("gpu5", ["gpu5"]),
        ("node[01-04,07],gpu5", ["node01", "node02", "node03", "node04", "node07", "gpu5"]),
        ("n[8-11]", ["n8", "n9", "n10", "n11"]),
        ("n[008-010]", ["n008", "n009", "n010"]),
        ("a1,b[2-3],c", ["a1", "b2", "b3", "c"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
        ("ip-10-0-[1,3]-5", ["ip-10-0-1-5", "ip-10-0-3-5"]),
        ("trn1-st-[0-1].cluster", ["trn1-st-0.cluster", "trn1-st-1.cluster"]),
        ("10.0.0.1", ["10.0.0.1"]),
    ],
)
def test_expand(nodelist: str, hosts: list[str]) -> None:
    assert expand_nodelist(nodelist) == hosts
    assert first_host(nodelist) == hosts[0]


def test_first_host_does_not_expand_the_rest() -> None:
    # A billion-host range would take forever to list; the first host is immediate.
    assert first_host("big[000000001-999999999]") == "big000000001"


@pytest.mark.parametrize("bad", ["", "n[1-2", "n1-2]", "n[a-b]", "n[3-1]", "n[[1]]", "a,,b", "n[1-]"])
def test_malformed(bad: str) -> None:
    with pytest.raises(NodeListError):
        expand_nodelist(bad)


@pytest.mark.parametrize(
    ("value", "counts"),
    [("4", [4]), ("2(x3)", [2, 2, 2]), ("2(x3),1", [2, 2, 2, 1]), ("1,3(x2)", [1, 3, 3])],
)
def test_tasks_per_node(value: str, counts: list[int]) -> None:
    assert parse_tasks_per_node(value) == counts


@pytest.mark.parametrize("bad", ["", "x", "2(x)", "2(3)", "2(x3"])
def test_tasks_per_node_malformed(bad: str) -> None:
    with pytest.raises(NodeListError):
        parse_tasks_per_node(bad)
