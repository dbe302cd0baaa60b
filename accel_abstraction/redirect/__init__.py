"""Runtime redirect: run unported CUDA code on any backend, reversibly, and report what to port.

``accel run script.py``, ``python -m accel_abstraction.run script.py`` or, in code,
``with accel.redirect_cuda(): ...``. See ``docs/redirect.md``.

Modules, one job each: :mod:`.spec` (the :class:`Redirect` type), :mod:`.devices`
(parse and translate device arguments), :mod:`.sites` (who called, counted per line),
:mod:`.serve` (wrapping a CUDA function to serve it with the backend), the redirect
tables :mod:`.cuda_module` (its rows :mod:`.cuda_rows`, derived from the porting table),
:mod:`.tensors`, :mod:`.amp`, :mod:`.dist`, :mod:`.knobs`, assembled with the plugins' by
:mod:`.table`, :mod:`.patches` (reversible patching), :mod:`.caches` (torch's caches of its
own functions, kept clean across install and undo), :mod:`.context` (:func:`redirect_cuda`),
:mod:`.report`, :mod:`.runner` and :mod:`.cli`.
"""

from __future__ import annotations

from .context import redirect_cuda
from .errors import RedirectCapabilityError
from .sites import Site
from .spec import Redirect

__all__ = ["Redirect", "RedirectCapabilityError", "Site", "redirect_cuda"]
