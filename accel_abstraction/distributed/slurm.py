"""SLURM's compact host-list and tasks-per-node syntax, parsed without calling ``scontrol``.

SLURM writes the nodes of a job or step in a compressed form
(``SLURM_JOB_NODELIST=node[01-04,07],gpu5``) and the tasks per node as a run-length list
(``SLURM_STEP_TASKS_PER_NODE=2(x3),1``). Only the first host is needed to rendezvous, so
:func:`iter_hosts` expands lazily and :func:`first_host` never builds the whole list.

Grammar handled (what ``scontrol show hostnames`` accepts in practice):

* items separated by commas outside brackets: ``a1,b[2-3]``;
* a bracket holds comma-separated numbers or ``lo-hi`` ranges; the width of ``lo`` sets
  zero padding (``[01-10]`` gives ``01 ... 10``, ``[8-10]`` gives ``8, 9, 10``);
* several bracket groups in one item expand as a product, left to right
  (``rack[1-2]-n[1-2]`` gives ``rack1-n1, rack1-n2, rack2-n1, rack2-n2``).
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["NodeListError", "expand_nodelist", "first_host", "iter_hosts", "parse_tasks_per_node"]


class NodeListError(ValueError):
    """A host list or tasks-per-node string does not follow SLURM's syntax."""


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside ``[...]``."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise NodeListError(f"nested '[' at position {i} in host list {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise NodeListError(f"unmatched ']' at position {i} in host list {text!r}")
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise NodeListError(f"unclosed '[' in host list {text!r}")
    items.append(text[start:])
    return items


def _range_set(body: str, whole: str) -> list[tuple[int, int, int]]:
    """``"01-03,7"`` -> ``[(1, 3, 2), (7, 7, 1)]``: (first, last, zero-padded width) per part."""
    ranges: list[tuple[int, int, int]] = []
    for part in body.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise NodeListError(f"bad range {part!r} in [{body}] of host list {whole!r}; expected N or N-M")
        start, stop = int(lo), int(hi) if sep else int(lo)
        if stop < start:
            raise NodeListError(f"descending range {part!r} in host list {whole!r}")
        ranges.append((start, stop, len(lo)))
    return ranges


def _values(ranges: list[tuple[int, int, int]]) -> Iterator[str]:
    for start, stop, width in ranges:
        for n in range(start, stop + 1):
            yield str(n).zfill(width)


def _product(prefix: str, groups: list[tuple[list[tuple[int, int, int]], str]]) -> Iterator[str]:
    """Lazy left-to-right product: ``prefix`` + value of group 0 + its suffix + value of group 1 ..."""
    if not groups:
        yield prefix
        return
    (ranges, suffix), rest = groups[0], groups[1:]
    for value in _values(ranges):
        yield from _product(prefix + value + suffix, rest)


def _expand_item(item: str, whole: str) -> Iterator[str]:
    """Expand one item without top-level commas, such as ``rack[1-2]-n[01-02]``."""
    head, bracket, rest = item.partition("[")
    if "]" in head:
        raise NodeListError(f"unmatched ']' in host list {whole!r}")
    groups: list[tuple[list[tuple[int, int, int]], str]] = []
    while bracket:
        body, closed, rest = rest.partition("]")
        if not closed:
            raise NodeListError(f"unclosed '[' in host list {whole!r}")
        suffix, bracket, rest = rest.partition("[")
        if "]" in suffix:
            raise NodeListError(f"unmatched ']' in host list {whole!r}")
        groups.append((_range_set(body, whole), suffix))
    yield from _product(head, groups)


def iter_hosts(nodelist: str) -> Iterator[str]:
    """Yield the host names of a SLURM host list in order, expanding lazily."""
    text = nodelist.strip()
    if not text:
        raise NodeListError("empty host list")
    for item in _split_top_level(text):
        item = item.strip()
        if not item:
            raise NodeListError(f"empty item in host list {nodelist!r}")
        yield from _expand_item(item, nodelist)


def expand_nodelist(nodelist: str) -> list[str]:
    """All host names of a SLURM host list: ``"node[01-02],gpu5"`` -> ``["node01", "node02", "gpu5"]``."""
    return list(iter_hosts(nodelist))


def first_host(nodelist: str) -> str:
    """The first host of a SLURM host list (the rendezvous host), without expanding the rest."""
    return next(iter_hosts(nodelist))


def parse_tasks_per_node(value: str) -> list[int]:
    """``"2(x3),1"`` -> ``[2, 2, 2, 1]``: SLURM's run-length tasks-per-node list, one entry per node."""
    counts: list[int] = []
    for part in value.strip().split(","):
        part = part.strip()
        count, paren, repeat = part.partition("(x")
        if not count.isdigit() or (paren and not (repeat.endswith(")") and repeat[:-1].isdigit())):
            raise NodeListError(f"bad tasks-per-node entry {part!r} in {value!r}; expected N or N(xM)")
        counts.extend([int(count)] * (int(repeat[:-1]) if paren else 1))
    return counts
