"""torch's device-backend autoload: ``import torch`` sets up the configured neuron device.

PyTorch calls every entry point of the group ``torch.backends`` at the end of ``import
torch`` (RFC pytorch/pytorch#122468); accel-neuron registers :func:`autoload` there, so
the neuron device exists before any library (accelerate, ``transformers.Trainer``,
Lightning) looks for one, with no change to the script:

* emulated neuron configured (``ACCEL_NEURON_EMULATE=1`` or ``[tool.accel.neuron] emulate
  = true``, with ``ACCEL_BACKEND`` / ``[tool.accel] backend`` = ``neuron``, an alias, or
  ``auto``): the backend is selected as ``accel.use()`` would, which installs the emulated
  device, its process group, and the Hugging Face glue
  (:mod:`accel_abstraction.integrations.huggingface`);
* native neuron: nothing to do here; AWS's ``torch_neuronx`` autoloads itself through the
  same entry-point group;
* anything else: returns after reading the environment (and the nearest ``pyproject.toml``
  when the environment does not decide it; ``benchmarks/bench_autoload.py`` measures it).

When torch is first imported from inside one of accel's own modules (an order the package's
entry points avoid: :func:`accel_abstraction._lazy.torch_first`), that module is still
half-initialized and selecting now would meet it (an import cycle). Then only the emulated
device itself is installed (:func:`.emulator.install.install`, which needs none of the
backend interface), so plain torch code finds ``neuron`` right after ``import torch``, unless
the half-imported module is one the install needs (:data:`INSTALL_NEEDS`); the selection
(process group, Hugging Face glue) is left to the first accel call, which selects the
configured backend anyway, with no warning.

An exception here would make ``import torch`` itself fail, so none escapes: a broken
configuration is reported as a :class:`RuntimeWarning`, and the same error is raised,
where it belongs, by the first ``accel`` call. ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns
all autoloading off (PyTorch's switch).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

from .names import NEURON, NEURON_ALIASES

__all__ = ["autoload", "configured"]

_SELECTED_BY = (NEURON, *NEURON_ALIASES, "auto")
_FALSE = ("0", "false", "no", "off", "n", "f", "")


def _lower(value: str | None) -> str | None:
    return None if value is None else value.strip().lower()


def configured() -> bool:
    """Whether the configuration selects the emulated neuron device (what :func:`autoload` sets up).

    Decided from the environment alone when it can be (no import, no file read); otherwise
    from the nearest ``pyproject.toml`` through the core's settings sections, which parse
    the file only when it mentions accel. Raises what those raise for a bad configuration.
    """
    # Read with os.environ, not through accel_abstraction (environment.read, CORE.raw): this runs
    # inside every `import torch`, and a process that configures no neuron must not pay for
    # importing accel_abstraction (benchmarks/bench_autoload.py). One of the two allowed raw reads
    # (tests/core/test_settings_docs.py RAW_READS_ALLOWED).
    backend, emulate = _lower(os.environ.get("ACCEL_BACKEND")), _lower(os.environ.get("ACCEL_NEURON_EMULATE"))
    if (backend is not None and backend not in _SELECTED_BY) or (emulate is not None and emulate in _FALSE):
        return False
    from accel_abstraction.sections import CORE

    from .settings import NEURON as NEURON_SECTION

    if not NEURON_SECTION.load().emulate:
        return False
    return str(CORE.load().backend).lower() in _SELECTED_BY


_OURS = ("accel_abstraction", "accel_neuron")

#: The modules :func:`.emulator.install.install` imports that import torch themselves, so that
#: torch's first import may come from inside one of them: while one is half-imported, installing
#: would meet it, and the device waits for the first accel call like the selection.
#: ``tests/test_autoload.py`` checks this against what ``install()`` really imports.
INSTALL_NEEDS = ("accel_neuron", "accel_abstraction.module_apply")


def _half_imported() -> list[str]:
    """accel's modules being imported right now (torch imported from inside them)."""
    return [
        name
        for name, module in list(sys.modules.items())
        if name.partition(".")[0] in _OURS
        and getattr(getattr(module, "__spec__", None), "_initializing", False)
    ]


def _needed_by_install(name: str) -> bool:
    return any(name == need or name.startswith(need + ".") for need in INSTALL_NEEDS)


def autoload() -> None:
    """Entry point of the ``torch.backends`` group (called by ``import torch``). Never raises."""
    try:
        if configured():
            importing = _half_imported()
            if importing:
                device_now = not any(_needed_by_install(name) for name in importing)
                if device_now:
                    from .emulator.install import install

                    install()
                logging.getLogger("accel_neuron").debug(
                    "import torch from inside %s: the neuron device is %s, the backend selected at the first "
                    "accel call",
                    ", ".join(importing),
                    "installed now" if device_now else "installed then too",
                )
                return
            import accel_abstraction

            accel_abstraction.use()
    except Exception as exc:  # noqa: BLE001 - an exception here breaks `import torch` for every library
        warnings.warn(
            f"accel-neuron: the neuron device was not set up at `import torch` ({type(exc).__name__}: {exc}). "
            "The first accel call raises this error again; fix the configuration it names, or set "
            "TORCH_DEVICE_BACKEND_AUTOLOAD=0 to skip autoloading.",
            RuntimeWarning,
            stacklevel=2,
        )
