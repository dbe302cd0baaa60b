"""Errors raised by the torch patch tooling. All derive from :class:`AccelError`."""

from __future__ import annotations

from ..errors import AccelError

__all__ = ["AlreadyAppliedError", "HunkMismatchError", "PatchError", "TorchVersionMismatchError"]


class PatchError(AccelError):
    """A patch series cannot be read, checked, applied, activated or reverted."""


class AlreadyAppliedError(PatchError):
    """The series is already applied to the torch files it would patch: nothing was written."""


class HunkMismatchError(PatchError):
    """A hunk's context or removed lines are not found in the file it patches."""


class TorchVersionMismatchError(PatchError):
    """The torch found is not the version a patch series or an overlay was made for."""

    def __init__(self, installed: str, expected: str, where: str) -> None:
        super().__init__(
            f"torch {installed} is installed but {where} is for torch {expected}; "
            f"install torch=={expected} or use patches made for {installed}."
        )
        self.installed = installed
        self.expected = expected
