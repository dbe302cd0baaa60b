"""The emulator's C++ device guard: built once per machine, loaded with ctypes.

PyTorch's C++ code asks the PrivateUse1 device guard for the current device
(``Tensor.to("neuron")``, ``torch.tensor(..., device="neuron")``,
``torch.accelerator``, device guards inside PyTorch). The guard that PyTorch's
Python backend API registers always answers device 0, so without a C++ guard
the current device cannot be anything else. ``csrc/device_guard.cpp`` (c10
headers only, a few seconds to compile) replaces it; it is compiled with
``torch.utils.cpp_extension`` into ``$TORCH_EXTENSIONS_DIR`` (default
``~/.cache/torch_extensions``) the first time the emulator installs, and reused after.

When it cannot be built (no C++ compiler, no ninja), the emulator still runs:
every device is reachable by explicit index (``neuron:1``), and selecting a
current device other than 0 raises an :class:`EmulatorError` that says why.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from pathlib import Path

import torch

log = logging.getLogger("accel_neuron.emulator")

_NAME = "accel_neuron_emulator_guard"
_SOURCE = Path(__file__).with_name("csrc") / "device_guard.cpp"

_lib: ctypes.CDLL | None = None
_failure: str | None = None


def _build_directory() -> Path:
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "torch_extensions"
    )
    # the build's commit, not __version__: the library depends on the binary, and a reported version
    # can be faked (the emulator's untested-release test does) without rebuilding
    build = getattr(torch.version, "git_version", None) or torch.__version__
    tag = f"torch{build[:12]}-py{sys.version_info[0]}{sys.version_info[1]}".replace("+", "_")
    path = Path(root) / f"{_NAME}-{tag}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _build() -> str:
    """Compile (or reuse) the guard library and return its path."""
    from torch.utils import cpp_extension

    directory = _build_directory()
    cpp_extension.load(
        name=_NAME,
        sources=[str(_SOURCE)],
        build_directory=str(directory),
        extra_cflags=["-O2"],
        is_python_module=False,
        verbose=False,
    )
    return str(directory / f"{_NAME}.so")


def register(count: int) -> bool:
    """Build, load and register the C++ guard for `count` devices; False (reason kept) when it cannot."""
    global _lib, _failure
    try:
        lib = ctypes.CDLL(_build())
        lib.accel_neuron_emulator_register_guard.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_set_current_device.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_register_guard(count)
    except Exception as exc:  # any build or load failure: run without it, and say why when it matters
        _failure = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
        log.warning(
            "neuron emulator: the C++ device guard could not be built (%s); neuron:0 stays the current "
            "device (neuron:1.. work by explicit index)",
            _failure,
        )
        return False
    _lib = lib
    return True


def library() -> ctypes.CDLL | None:
    """The loaded guard library, or None when it could not be built."""
    return _lib


def failure() -> str | None:
    """Why the guard could not be built (None when it was, or was not tried)."""
    return _failure
