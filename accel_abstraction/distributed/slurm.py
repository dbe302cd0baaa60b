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

import itertools
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


def _expand_range_set(body: str, whole: str) -> list[str]:
    """``"01-03,7"`` -> ``["01", "02", "03", "7"]``."""
    values: list[str] = []
    for part in body.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise NodeListError(f"bad range {part!r} in [{body}] of host list {whole!r}; expected N or N-M")
        if not sep:
            values.append(lo)
            continue
        start, stop = int(lo), int(hi)
        if stop < start:
            raise NodeListError(f"descending range {part!r} in host list {whole!r}")
        width = len(lo)
        values.extend(str(n).zfill(width) for n in range(start, stop + 1))
    return values


def _expand_item(item: str, whole: str) -> Iterator[str]:
    """Expand one comma-free (at top level) item such as ``rack[1-2]-n[01-02]``."""
    pieces: list[list[str]] = []
    rest = item
    while "[" in rest:
        head, _, tail = rest.partition("[")
        body, closed, rest = tail.partition("]")
        if not closed:
            raise NodeListError(f"unclosed '[' in host list {whole!r}")
        pieces.append([head])
        pieces.append(_expand_range_set(body, whole))
    if "]" in rest:
        raise NodeListError(f"unmatched ']' in host list {whole!r}")
    pieces.append([rest])
    for combo in itertools.product(*pieces):
        yield "".join(combo)


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
