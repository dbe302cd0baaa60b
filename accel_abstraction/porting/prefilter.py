"""Cheap text tests that keep the scanner from doing work that cannot find anything.

Two levels: :func:`might_couple` decides from the raw text whether a file is worth
parsing at all; :func:`hot_lines` lists the lines that can hold a finding, so the
scanner walks only statements touching one of them (:func:`touches`).  Both are
supersets by construction: every built-in rule needs one of :data:`BUILTIN_PRECHECK`,
a bare integer device (:data:`BARE_DEVICE`), or a name imported from a CUDA module
(added by the scanner as extra needles) on one of the lines of the reported statement.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence

#: Substrings (case-sensitive) one of which a file must contain for a built-in rule to fire,
#: besides bare integer devices (``.to(0)``, ``device=local_rank``), which the scanner
#: tests with one regular expression.
BUILTIN_PRECHECK: tuple[str, ...] = (
    "cuda", "CUDA", "cudnn", "CUDNN", "nccl", "NCCL", "pin_memory", "GradScaler", "apex", "cupy", "nvtx",  # accel: ignore
    "nvml", "_scaled_mm", "fused=True", '"fused"', "'fused'", "use_fused", "peak_flops", "PEAK_FLOPS", "flops_promised", "e12", "peak_bandwidth", "PEAK_BANDWIDTH", "autocast_gpu_dtype",
    "float8_training",
    "nvidia-smi", "gencode", "generate-code", "arch=sm_",  # accel: ignore
    '.cu"', ".cu'", ".cuh",
    # CUDA libraries' variables, compiled CUDA extension modules, NVIDIA tools, torch's NVIDIA environment report
    "CUBLAS", "CUFFT", "CURAND", "CUSPARSE", "NVIDIA_", "NVTE_", "amp_C", "nvcc", "cuobjdump", "nvdisasm", "nvprof",  # accel: ignore
    "collect_env", "triton",
)

_RANKISH = r"(?:\d|[\w.]*(?:rank|gpu|gpu_id|gpu_idx|gpu_index|device_id|device_idx|device_index|dev_id)\b)"
#: ``.to(0)``, ``.to(local_rank)``, ``device=0``, ``device_ids=[rank]``, ``device_id=rank``: coupling without the word cuda.
BARE_DEVICE = re.compile(
    r"\.to\(\s*" + _RANKISH + r"|device(?:_ids?)?\s*[=(]\s*\[?\s*" + _RANKISH
    # command-line options choosing a device (an integer default is a CUDA ordinal)
    + r"""|['"]--?(?:device|gpu)[\w-]*['"]"""
    # a device ordinal as a parameter's default: def f(gpu=0)
    + r"|\b(?:gpu|gpu_id|gpu_idx|gpu_index|device|device_id|device_idx|device_index|dev_id|cuda_device)\s*(?::\s*int\s*)?=\s*\d"
)


#: A line break as Python's tokenizer sees one: CRLF, LF or a lone CR.
_LINE_BREAK = re.compile(r"\r\n?|\n")


def might_couple(source: str, extra: Iterable[str] = ()) -> bool:
    """Can ``source`` contain anything a rule reports?

    Substring tests (a fast search in C) and one regular expression; a small fraction
    of the cost of parsing the file.
    """
    for needle in BUILTIN_PRECHECK:
        if needle in source:
            return True
    for needle in extra:
        if needle in source:
            return True
    return BARE_DEVICE.search(source) is not None


def hot_lines(source: str, needles: Iterable[str], pattern: re.Pattern[str] | None = None) -> list[int]:
    """Sorted 1-based numbers of the lines containing a needle or a match of ``pattern``."""
    positions: list[int] = []
    for needle in needles:
        if not needle:
            continue
        start = source.find(needle)
        while start != -1:
            positions.append(start)
            start = source.find(needle, start + 1)
    if pattern is not None:
        positions += [m.start() for m in pattern.finditer(source)]
    positions.sort()
    lines: list[int] = []
    line, previous = 1, 0
    counted = "\r" not in source  # CR-only or mixed endings: a lone CR ends a line, as for the parser
    for pos in positions:
        line += source.count("\n", previous, pos) if counted else len(_LINE_BREAK.findall(source, previous, pos))
        previous = pos
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def touches(node: ast.stmt, lines: Sequence[int]) -> bool:
    """Whether statement ``node`` (decorators included) spans one of ``lines``."""
    start = node.lineno
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        start = min(start, decorators[0].lineno)
    index = bisect_left(lines, start)
    return index < len(lines) and lines[index] <= (node.end_lineno or node.lineno)
