"""Command-line options of the ported program that name CUDA, and what to pass instead.

A training script's own ``--device cuda`` (a default, a ``choices`` list, an integer
ordinal) outlives the port: the shell scripts and job files that start it still pass
``--device cuda``, and ``choices=["cuda", "cpu"]`` refuses the selected backend's device
type.  ``accel port`` lists each such option after its rewrite (see :func:`find`), so a
person knows what to change where the program is started.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .guards import last_name, str_value

#: Words of a flag that name a device (``--device``, ``--gpu``, ``--gpus``).
_DEVICE_WORDS = frozenset({"device", "devices", "gpu", "gpus"})
#: Other words a flag choosing a device may have (``--gpu-id``, ``--device-name``, ``--cuda-device``);
#: any other word makes it about something else (``--device-batch-size``, ``--num-gpus``).
_QUALIFIERS = frozenset({"id", "ids", "idx", "index", "ordinal", "name", "type", "cuda", "local", "main", "default", "target"})


def _chooses_device(flag: str) -> bool:
    words = [w for w in re.split(r"[-_]+", flag.lower()) if w]
    return any(w in _DEVICE_WORDS for w in words) and all(w in _DEVICE_WORDS or w in _QUALIFIERS for w in words)


def device_option(names: Sequence[str]) -> str | None:
    """The longest flag among ``add_argument``'s positional ``names`` if it chooses a device, else ``None``."""
    flags = [n for n in names if n.startswith("-") and _chooses_device(n)]
    return max(flags, key=len) if flags else None


@dataclass(frozen=True)
class CudaOption:
    """One command-line option naming CUDA: where, which, what it says, what to pass instead."""

    path: str
    line: int
    option: str
    what: str
    instead: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.option}: {self.what}; {self.instead}"


def _options(call: ast.Call) -> Iterator[tuple[str, ast.AST]]:
    for kw in call.keywords:
        if kw.arg in ("default", "choices"):
            yield kw.arg, kw.value


def find(source: str, path: str = "<string>") -> list[CudaOption]:
    """Every ``add_argument`` of ``source`` choosing a device whose default or choices name CUDA."""
    if "add_argument" not in source:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    found: list[CudaOption] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and last_name(node.func) == "add_argument"):
            continue
        option = device_option([str_value(a) or "" for a in node.args])
        if option is None:
            continue
        use = f"pass `{option} <accel.device_type()>` (`{option} neuron`, `{option} cpu`) where the program was started with `{option} cuda`"
        for key, value in _options(node):
            text = str_value(value)
            if key == "default" and text is not None and text.startswith("cuda"):
                found.append(CudaOption(path, node.lineno, option, f"default {text!r} (the port makes it accel.device_type())", use))
            elif key == "default" and isinstance(value, ast.Constant) and type(value.value) is int:
                found.append(CudaOption(path, node.lineno, option, f"default {value.value}, a CUDA device ordinal",
                                        f"make it a device string; {use}"))  # fmt: skip
            elif key == "choices" and isinstance(value, (ast.List, ast.Tuple, ast.Set)):
                named = [str_value(e) for e in value.elts]
                if any((n or "").startswith("cuda") for n in named):
                    found.append(CudaOption(path, node.lineno, option, f"choices {named} refuse the selected backend's device type",
                                            f"add accel.device_type() to the choices, then {use}"))  # fmt: skip
    return sorted(found, key=lambda o: o.line)
