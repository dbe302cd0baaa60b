"""One row of the CUDA API table: a CUDA API, what replaces it, and what the rewrite means on the cpu backend.

Each built-in rule (:mod:`.rules`) lists the rows it reports (``Rule.apis``); the table
(:data:`.mapping.TABLE`) is generated from the rules, so a row is written once, in its
rule's file.

Row kinds:

- ``call``: a function or class with a drop-in replacement (``torch.cuda.synchronize`` ->
  ``accel.synchronize``); ``accel port`` renames the callee and keeps the arguments.
- ``flag``: a backend flag set by assignment (``torch.backends.cudnn.benchmark = b`` ->
  ``accel.set_benchmark(b)``).
- ``manual``: a name (and everything under it) with no automatic rewrite; ``hint`` says
  what a person should do.  The longest matching prefix wins, so
  ``torch.cuda.get_device_properties`` is reported with its own hint and any other
  ``torch.cuda.*`` with the generic one.
- ``package``: an imported package that is inherently CUDA (``apex``, ``cupy``).

What a rewrite means on the cpu backend (column ``on_cpu``): a port must not change what a
program does on the machine it ran on before, a CPU without CUDA.  Each portable row says
which of these holds, and ``tests/porting/test_cpu_meaning.py`` runs the original and the
ported call with the cpu backend for every row and checks it:

- ``SAME``: the accel call answers what the CUDA call answers without CUDA
  (``torch.cuda.is_available()`` -> ``accel.is_accelerator_available()``: False);
- ``GUARDED``: the accel call would answer differently on the cpu backend (``accel.device_count()``
  is 1 where ``torch.cuda.device_count()`` was 0; ``accel.manual_seed_all`` seeds the CPU
  generator where the CUDA one was a no-op), so the port asks
  ``accel.is_accelerator_available()`` first and keeps ``cpu_value`` otherwise;
- ``ENABLED``: autocast and GradScaler without CUDA are disabled; the port passes
  ``enabled=... and accel.is_accelerator_available()`` so they stay disabled on the cpu backend;
- ``RAISES``: the CUDA call raises without CUDA, so no program that ran on a CPU reached it; the
  port runs there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["call", "flag", "manual", "package"]

#: ``on_cpu`` values (module docstring).
SAME = "same"
GUARDED = "guarded"
ENABLED = "enabled"
RAISES = "raises"
#: What each ``on_cpu`` value means, as the docs table shows it.
ON_CPU_TEXT = {
    SAME: "same result as without CUDA",
    GUARDED: "asks accel.is_accelerator_available() first; keeps `{cpu_value}` as without CUDA",
    ENABLED: "disabled, as without CUDA (`enabled=... and accel.is_accelerator_available()`)",
    RAISES: "the CUDA call raises without CUDA; the port runs",
}
#: The predicate guarded rewrites ask first.
ACCELERATOR_TEST = "accel.is_accelerator_available()"


@dataclass(frozen=True)
class ApiMapping:
    """One row: a CUDA API and its portable replacement.

    Attributes:
        api: the fully qualified name as written after import resolution.
        code: the scan rule code reported for it (set by the rule that lists the row).
        kind: ``call``, ``flag``, ``manual`` or ``package`` (module docstring).
        replacement: the accel callable (``"accel.synchronize"``) for ``call``/``flag`` rows.
        hint: for manual rows, what a person should do; for others a note (may be empty).
        on_cpu: for portable rows, what the rewrite means on the cpu backend compared with
            the original on a machine without CUDA (``SAME``, ``GUARDED``, ``ENABLED``, ``RAISES``).
        cpu_value: for ``GUARDED`` rows, the original's result without CUDA (source text).
    """

    api: str
    code: str
    kind: Kind
    replacement: str | None = None
    hint: str = ""
    on_cpu: str = ""
    cpu_value: str | None = None

    @property
    def guarded(self) -> bool:
        """Whether the port asks :data:`ACCELERATOR_TEST` before the accel call (keeps ``cpu_value`` otherwise)."""
        return self.on_cpu == GUARDED

    @property
    def on_cpu_text(self) -> str:
        """``on_cpu`` in words (the docs column); empty for manual rows."""
        return ON_CPU_TEXT[self.on_cpu].format(cpu_value=self.cpu_value) if self.on_cpu else ""

    @property
    def portable(self) -> bool:
        """Whether ``accel port`` rewrites this API by itself."""
        return self.replacement is not None

    @property
    def port_to(self) -> str:
        """What to write instead, as shown to a person (``accel.synchronize()`` or the hint)."""
        if self.replacement is None:
            return self.hint
        if self.kind == "flag":
            return f"{self.replacement}(flag)"
        return f"{self.replacement}()"


# Row constructors for the rules' files; the rule fills in ``code``.


def call(api: str, replacement: str, on_cpu: str, hint: str = "") -> ApiMapping:
    """A drop-in replacement whose meaning on the cpu backend is ``on_cpu`` (``SAME``, ``ENABLED``, ``RAISES``)."""
    return ApiMapping(api, "", "call", replacement, hint, on_cpu)


def kept(api: str, replacement: str, cpu_value: str, hint: str = "") -> ApiMapping:
    """A replacement asked for only where :data:`ACCELERATOR_TEST` holds; ``cpu_value`` (the original's result without CUDA) otherwise."""
    return ApiMapping(api, "", "call", replacement, hint, GUARDED, cpu_value)


def flag(api: str, setter: str, on_cpu: str, cpu_value: str | None = None) -> ApiMapping:
    """A backend flag set by assignment, ported to a call of ``setter``."""
    return ApiMapping(api, "", "flag", setter, "", on_cpu, cpu_value)


def manual(api: str, hint: str) -> ApiMapping:
    """A name (and everything under it) that a person must port; ``hint`` says how."""
    return ApiMapping(api, "", "manual", None, hint)


def package(name: str, hint: str) -> ApiMapping:
    """An imported package (and its submodules) that is inherently CUDA."""
    return ApiMapping(name, "", "package", None, hint)
