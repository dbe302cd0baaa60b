"""The :class:`Redirect` type: one attribute of one object, replaced while a redirect is active.

The core builds its table of CUDA redirects from these; a backend plugin contributes its own
through the ``accel_redirects(backend, register)`` hook::

    from accel_abstraction import hookimpl
    from accel_abstraction.redirect import Redirect

    @hookimpl
    def accel_redirects(backend, register):
        if backend.name == "mydev":
            register(Redirect(torch.cuda, "get_device_properties", my_properties, "device",
                              hint="mydev.get_device_properties()"))

A plugin's redirect replaces a core redirect of the same ``(target, name)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Redirect"]


@dataclass(frozen=True)
class Redirect:
    """Replace ``target.<name>`` by ``replacement`` while a redirect is active.

    * ``target``: the object holding the attribute (a module such as ``torch.cuda``, or a
      class such as ``torch.Tensor``). The value found in ``target.__dict__`` (or its
      absence) is saved on install and put back exactly on undo.
    * ``name``: the attribute name.
    * ``replacement``: the new value (a function, a class, a descriptor).
    * ``category``: the group it is reported under (``"device"``, ``"memory"``, ``"rng"``,
      ``"amp"``, ``"execution"``, ``"distributed"``, ``"knobs"``, ``"unsupported"``, or a
      plugin's own word).
    * ``api``: the name shown in the report (default ``"<target name>.<name>"``).
    * ``hint``: what to port the call to (shown in the report, e.g. ``"accel.synchronize()"``).
    * ``record``: when ``True`` and ``replacement`` is a plain function, it is wrapped so
      that calls from user code are counted in the report and calls from torch,
      accel-abstraction or the backend's own package get the original (so a replacement
      that calls the original never recurses). The core's own redirects record
      themselves and set ``False``.
    """

    target: Any
    name: str
    replacement: Any
    category: str
    api: str = ""
    hint: str = ""
    record: bool = True

    @property
    def label(self) -> str:
        """The API name shown in reports."""
        if self.api:
            return self.api
        owner = getattr(self.target, "__name__", type(self.target).__name__)
        return f"{owner}.{self.name}"
