"""Every ``ACCEL_*`` environment variable that is not a configuration setting.

Configuration settings (``ACCEL_BACKEND``, ``ACCEL_DIST_*``, ``ACCEL_SCAN_*``, a plugin's
section such as ``ACCEL_NEURON_*``) are declared by their sections and listed by
``accel config show``. The variables here are the others: process-level switches read before
any configuration is loaded (which plugins load), and the variables a tool sets for the child
process it starts (``accel parity`` for the script it runs, ``accel run`` for subprocesses).

This table is the list of the core's; a plugin declares its own with the
``accel_process_variables(register)`` hook (:func:`process_variables` gathers both).
``docs/settings.md`` is generated from them and from the sections
(``python -m accel_abstraction.settings_docs``), and tests fail when code names an ``ACCEL_*``
variable that nothing declares, or reads one with ``os.environ`` instead of :func:`read` /
:func:`flag` (the one layer that reads them; a section's variables are read by its
:class:`~accel_abstraction.sections.SectionSpec`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, NamedTuple

from .errors import AccelError, PluginError

__all__ = [
    "EnvVar",
    "PROCESS_VARIABLES",
    "TRUE_WORDS",
    "UndeclaredVariableError",
    "flag",
    "process_variables",
    "read",
]


class EnvVar(NamedTuple):
    """One process-level variable."""

    name: str
    set_by: Literal["user", "tool"]
    """``user``: a person (or CI) sets it; ``tool``: an accel tool sets it for a child process
    (setting it by hand is for debugging that tool)."""
    read_by: str
    """The module that reads it (where its exact syntax is documented)."""
    meaning: str


#: The process-level ``ACCEL_*`` variables, by area.
PROCESS_VARIABLES: tuple[EnvVar, ...] = (
    EnvVar("ACCEL_PLUGINS", "user", "accel_abstraction.plugins",
           "Comma-separated plugin names: load only these entry points (one not installed is an error)."),
    EnvVar("ACCEL_DISABLE_PLUGIN_AUTOLOAD", "user", "accel_abstraction.plugins",
           "1/true: load no entry point except those named in ACCEL_PLUGINS."),
    EnvVar("ACCEL_PLUGIN_IMPORT_TIMEOUT", "user", "accel_abstraction.plugin_discovery",
           "Seconds a plugin's import may take before it is recorded as failed (default 10; 0: no bound)."),
    EnvVar("ACCEL_TEST_BACKENDS", "user", "accel_abstraction.testing.compare",
           "Comma-separated backends the pytest plugin's cross-backend comparisons run on (first: the reference)."),
    EnvVar("ACCEL_PATCHES_DIR", "user", "accel_abstraction.patching.series",
           "Folder of the PyTorch patch series to use instead of the installed one."),
    EnvVar("ACCEL_TORCH_OVERLAY", "user", "accel_abstraction.patching.overlay",
           "Folder of the patched-torch overlay (default ./.accel-overlay/torch-VERSION)."),
    EnvVar("ACCEL_METRICS_FILE", "tool", "accel_abstraction.metrics",
           "JSON-lines file accel.log_metric appends to; accel parity sets it for each leg."),
    EnvVar("ACCEL_PARITY_SEED_INDEX", "tool", "accel_abstraction.parity.seeding",
           "Run k of accel parity --seeds: the seeds the script sets are derived from k."),
    EnvVar("ACCEL_PARITY_FINGERPRINTS", "tool", "accel_abstraction.parity.fingerprint",
           "File where a parity leg records per-step tensor fingerprints (to locate where runs part)."),
    EnvVar("ACCEL_PARITY_FINGERPRINT_STEPS", "tool", "accel_abstraction.parity.fingerprint",
           "all, or the step positions (4,5) whose fingerprints are recorded."),
    EnvVar("ACCEL_PARITY_FINGERPRINT_STOP", "tool", "accel_abstraction.parity.fingerprint",
           "1: end the leg (exit 0) after the last recorded step."),
    EnvVar("ACCEL_PARITY_FINGERPRINT_BOUNDARY", "tool", "accel_abstraction.parity.fingerprint",
           "What counts as a step for fingerprints: metrics (default) or optimizer."),
    EnvVar("ACCEL_REDIRECT", "tool", "accel_abstraction.redirect.children",
           "Set by accel run so that Python subprocesses of the target install the same redirect."),
)  # fmt: skip


#: The values (any case, surrounding blanks ignored) that :func:`flag` reads as on.
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})

_CORE = {row.name: row for row in PROCESS_VARIABLES}


class UndeclaredVariableError(AccelError, LookupError):
    """:func:`read` or :func:`flag` was given a name that no row of :data:`PROCESS_VARIABLES` declares."""


def _row(name: str | EnvVar) -> EnvVar:
    if isinstance(name, EnvVar):  # a plugin's own row (accel_process_variables)
        return name
    row = _CORE.get(name)
    if row is None:
        raise UndeclaredVariableError(
            f"{name!r} is not a process variable of accel_abstraction.environment.PROCESS_VARIABLES; add a row "
            "there (a plugin: pass its own EnvVar row), or read a configuration setting through its section"
        )
    return row


def read(name: str | EnvVar, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of a declared process variable, as set (``None``: unset).

    ``name``: a core row's name (``"ACCEL_PLUGINS"``) or a plugin's :class:`EnvVar` row;
    ``environ``: the environment to read (default ``os.environ``; a child's, in tests).
    """
    return (os.environ if environ is None else environ).get(_row(name).name)


def flag(name: str | EnvVar, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a declared switch is on: set to one of :data:`TRUE_WORDS` (any case)."""
    value = read(name, environ)
    return value is not None and value.strip().lower() in TRUE_WORDS


def process_variables() -> list[tuple[str, EnvVar]]:
    """Every process-level variable with what declares it: ``("core", row)`` for the
    core's rows, then ``(plugin name, row)`` for each plugin's (``accel_process_variables``).

    Loads the tool plugins (for ``docs/settings.md`` and its tests, not for a run). A plugin that
    registers something other than an :class:`EnvVar`, or a core row's name, contributes nothing
    (a warning names it)."""
    from .plugins import get_host

    def check(item: object) -> None:
        if not isinstance(item, EnvVar):
            raise PluginError(f"register() takes an accel_abstraction.environment.EnvVar, got {item!r}")
        if item.name in _CORE:
            raise PluginError(f"{item.name} is a variable of accel_abstraction itself; declare a name of your own")

    rows = [("core", row) for row in PROCESS_VARIABLES]
    seen = set(_CORE)
    for plugin, row in get_host("tools").collect("accel_process_variables", check):
        if row.name not in seen:
            seen.add(row.name)
            rows.append((plugin, row))
    return rows
