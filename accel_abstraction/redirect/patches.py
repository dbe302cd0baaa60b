"""Install a list of :class:`Redirect` reversibly: every original is put back exactly.

For each ``(target, name)`` the entry of ``target.__dict__`` is saved (or its absence: an
attribute inherited from a base class, such as ``torch.Tensor.cuda`` from
``torch._C.TensorBase``, is deleted again on undo rather than copied down). Undo runs in
reverse order. A failure half-way through installing undoes what was installed.
Not thread-safe by itself: :mod:`.context` serialises install and undo with a lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .spec import Redirect

__all__ = ["ABSENT", "Patcher"]

#: The marker :meth:`Patcher.saved` gives for an attribute the target only inherited (nothing to restore).
ABSENT = object()


class Patcher:
    """Applies redirects and undoes them."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    @property
    def installed(self) -> bool:
        return bool(self._saved)

    def saved(self) -> list[tuple[Any, str, Any]]:
        """``(target, name, original __dict__ entry or ABSENT)`` for each installed redirect."""
        return list(self._saved)

    def install(self, redirects: Iterable[Redirect]) -> None:
        try:
            for r in redirects:
                original = vars(r.target).get(r.name, ABSENT)
                setattr(r.target, r.name, r.replacement)
                self._saved.append((r.target, r.name, original))
        except BaseException:
            self.undo()
            raise

    def undo(self) -> None:
        while self._saved:
            target, name, original = self._saved.pop()
            if original is ABSENT:
                delattr(target, name)
            else:
                setattr(target, name, original)


