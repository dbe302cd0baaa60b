"""Errors of the runtime redirect: a CUDA call the selected backend cannot serve."""

from __future__ import annotations

from ..errors import CapabilityError

__all__ = ["RedirectCapabilityError"]


class RedirectCapabilityError(CapabilityError):
    """A redirected CUDA API has no equivalent on the selected backend.

    The message names the CUDA API, where it was called from, the backend, why, and what
    to do. ``api``, ``site`` (``"file:line"`` or ``""``), ``backend`` and ``feature`` are
    kept as attributes.
    """

    def __init__(
        self, api: str, backend: str, feature: str, reason: str = "", site: str = "", todo: str = ""
    ) -> None:
        super().__init__(backend, feature, reason)
        where = f" (called at {site})" if site else ""
        why = f"the backend does not support {feature}" + (f" ({reason})" if reason else "")
        todo = todo or (
            f"port this call with `accel port`, or guard it with accel.capabilities().supports({feature!r})"
        )
        self.args = (f"{api}{where} cannot be redirected to backend {backend!r}: {why}; {todo}",)
        self.api = api
        self.site = site
