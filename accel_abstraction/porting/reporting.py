"""The scanner's bookkeeping: positions in characters, and turning a site into a :class:`Finding`."""

from __future__ import annotations

import ast
import io

from .findings import Finding
from .fixes import Fix
from .rules import RULES_BY_CODE, Rule


class Reporter:
    """Collects the findings of one file; base of the scanner's check mixins."""

    def __init__(self, source: str, path: str) -> None:
        self.source = source
        self.path = path
        self.lines = source.splitlines()
        self.findings: list[Finding] = []
        #: ids of nodes already reported by a check that looked at them from their parent
        self.done: set[int] = set()
        #: ids of string literals that are one side of a comparison (``x == "nccl"``)
        self.compared: set[int] = set()
        self._raw_lines: list[str] | None = None  # split like the tokenizer does, for segment()

    def segment(self, node: ast.AST) -> str | None:
        """The source text of ``node`` (``ast.get_source_segment`` without splitting the file per call)."""
        line, end_line = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if line is None or end_line is None or col is None or end_col is None:
            return None
        line, end_line = line - 1, end_line - 1
        if self._raw_lines is None:
            self._raw_lines = io.StringIO(self.source, newline="").readlines()
        lines = self._raw_lines
        if end_line >= len(lines):
            return None
        if line == end_line:
            return lines[line].encode()[col:end_col].decode()
        first = lines[line].encode()[col:].decode()
        last = lines[end_line].encode()[:end_col].decode()
        return first + "".join(lines[line + 1 : end_line]) + last

    def _col(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        if line.isascii():
            return col
        return len(line.encode("utf-8")[:col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        """1-based lines and 0-based character columns of ``node`` (libcst's coordinates)."""
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return (
            line,
            self._col(line, node.col_offset),  # type: ignore[attr-defined]
            end_line,
            self._col(end_line, node.end_col_offset or 0),  # type: ignore[attr-defined]
        )

    def report(
        self,
        node: ast.AST,
        code: str,
        detail: str | None = None,
        fix: Fix | None = None,
        suggestion: str | None = None,
        fix_node: ast.AST | None = None,
        rule: Rule | None = None,
    ) -> None:
        """Record a finding of rule ``code`` at ``node``; with ``fix``, how to rewrite it (at ``fix_node``, default ``node``)."""
        rule = rule or RULES_BY_CODE[code]
        line, col, end_line, end_col = self.span(node)
        if fix is not None:
            fix = fix.at(self.span(fix_node or node))
        if fix is None:
            # Not rewritten: say why, or what a person should write instead.
            reason = suggestion or detail or rule.suggestion or "no portable equivalent"
            if reason is detail:
                detail = None
            suggestion = "manual: " + reason
        else:
            suggestion = suggestion or rule.suggestion
        message = rule.message if detail is None else f"{rule.message}: {detail}"
        self.findings.append(
            Finding(self.path, line, col + 1, end_line, end_col + 1, code, rule.category, message, suggestion, fix)
        )
