"""Every ``ACCEL_*`` environment variable that is not a configuration setting.

Configuration settings (``ACCEL_BACKEND``, ``ACCEL_DIST_*``, ``ACCEL_SCAN_*``, a plugin's
section such as ``ACCEL_NEURON_*``) are declared by their sections and listed by
``accel config show``. The variables here are the others: process-level switches read before
any configuration is loaded (which plugins load), and the variables a tool sets for the child
process it starts (``accel parity`` for the script it runs, ``accel run`` for subprocesses).

This table is the list of them: ``docs/settings.md`` is generated from it and from the
sections (``python -m accel_abstraction.settings_docs``), and a test fails when code names an
``ACCEL_*`` variable that neither declares.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["EnvVar", "PROCESS_VARIABLES"]


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
    EnvVar("ACCEL_NEURON_EMULATOR_HOT_PATH", "user", "accel_neuron.emulator.native",
           "python: serve emulated neuron ops by the Python per-op path instead of the C++ core (a CI leg runs it)."),
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
