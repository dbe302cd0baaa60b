"""Import resolution: which fully qualified name a local name or attribute chain means.

``import torch.cuda as tc`` makes ``tc.synchronize`` mean ``torch.cuda.synchronize``;
``from torch.cuda import amp`` makes ``amp.GradScaler`` mean ``torch.cuda.amp.GradScaler``.
Imports anywhere in the file count (a linter's view, not a scope analysis).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from .prefilter import touches


class AliasMap:
    """Local names bound by imports, mapped to the qualified names they stand for."""

    __slots__ = ("names",)

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    @classmethod
    def from_tree(cls, tree: ast.Module, import_lines: Sequence[int] | None = None) -> AliasMap:
        """Collect every ``import`` and ``from ... import`` statement in ``tree``.

        Only statements are visited (imports are statements); with ``import_lines`` (the
        lines containing the word ``import``), statements away from them are skipped.
        """
        aliases = cls()
        stack: list[ast.AST] = list(tree.body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Import):
                aliases.add_import(node)
            elif isinstance(node, ast.ImportFrom):
                aliases.add_import_from(node)
            elif isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)):
                if import_lines is not None and isinstance(node, ast.stmt) and not touches(node, import_lines):
                    continue
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                        stack.append(child)
        return aliases

    def add_import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.names[alias.asname] = alias.name
            else:
                head = alias.name.partition(".")[0]
                self.names[head] = head

    def add_import_from(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return  # relative imports are the project's own code
        for alias in node.names:
            if alias.name == "*":
                continue
            self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def qualname(self, node: ast.AST) -> str | None:
        """Resolve a ``Name`` or ``Attribute`` chain rooted in an imported name."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.names.get(node.id)
        if root is None:
            return None
        if not parts:
            return root
        parts.reverse()
        return root + "." + ".".join(parts)
