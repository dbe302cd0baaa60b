"""Jupyter notebooks: ``accel scan`` reads their code cells; ``accel port`` refuses them.

Each code cell is scanned as its own module; findings name the cell (1-based, counting
every cell as Jupyter shows them) and the line inside it: ``nb.ipynb[cell 3]:5:1 ACC101 ...``.
IPython syntax is blanked before parsing (line magics ``%``, shell escapes ``!``, help
``?``), keeping line numbers; cells run by a cell magic (``%%bash``) are not Python and
are skipped.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from .findings import FileResult
from .rules import Rule
from .scanner import scan_source

#: Why ``accel port`` does not rewrite notebooks.
PORT_REFUSAL = (
    "notebooks are scanned, not ported: rewrite the reported cells by hand, "
    "or convert the notebook to a script (jupyter nbconvert --to script) and port that"
)


#: A line break in a cell: LF, CRLF or a lone CR (all end a line for the parser).
_LINE_BREAK = re.compile(r"\r\n?|\n")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def code_cells(path: Path) -> list[tuple[int, str]]:
    """``(cell number, Python source)`` of each code cell; ``ValueError`` if not a notebook."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a Jupyter notebook (invalid JSON at line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise ValueError("not a Jupyter notebook (its JSON nests too deeply to read)") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a Jupyter notebook (no 'cells' list); nbformat 4 is read")
    out = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            text = "".join(source)
        elif isinstance(source, str):
            text = source
        else:
            raise ValueError(
                f"not a valid Jupyter notebook (cell {number}: 'source' is {type(source).__name__} "
                f"{_short(source)}, not text or a list of text)"
            )
        if text.lstrip().startswith("%%"):
            continue
        lines = ["" if line.lstrip().startswith(("%", "!", "?")) else line for line in _LINE_BREAK.split(text)]
        out.append((number, "\n".join(lines) + "\n"))
    return out


def scan_notebook(
    path: Path, rules: Sequence[Rule] | None = None, enabled: Callable[[str], bool] | None = None
) -> FileResult:
    """Scan every code cell of the notebook at ``path`` (``rules`` as for :func:`~.scanner.scan_source`)."""
    try:
        cells = code_cells(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return FileResult(str(path), error=f"{path}: cannot read: {exc}")
    result = FileResult(str(path), skipped=True)
    errors = []
    for number, source in cells:
        where = f"{path}[cell {number}]"
        cell = scan_source(source, where, rules, enabled)
        if cell.error:
            errors.append(cell.error)
        if not cell.skipped:
            result.skipped = False
        result.findings += [dataclasses.replace(f, path=where) for f in cell.findings]
    if errors:
        result.error = "; ".join(errors)
    return result
