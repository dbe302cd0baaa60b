"""The emulator's C++ core (device guard and PrivateUse1 hooks): built once per machine, loaded with ctypes.

PyTorch's C++ code asks the PrivateUse1 device guard for the current device
(``Tensor.to("neuron")``, ``torch.tensor(..., device="neuron")``,
``torch.accelerator``, device guards inside PyTorch). The guard that PyTorch's
Python backend API registers always answers device 0, so without a C++ guard
the current device cannot be anything else. ``csrc/device_guard.cpp`` replaces it.
``csrc/runtime.cpp`` implements PyTorch's PrivateUse1 hooks interface, which Python
cannot: device generators (``torch.Generator(device="neuron")``), pinned host memory
(``Tensor.pin_memory()``/``is_pinned()``), device count and current device for
``torch.accelerator``. The other files are the compiled per-op path and the storage
bookkeeping it needs (see :func:`hot_path`), one concern per file with the declarations they share in
``csrc/emulator.h`` (its opening comment lists them). All are compiled into one library with
``torch.utils.cpp_extension`` into ``$TORCH_EXTENSIONS_DIR`` (default
``~/.cache/torch_extensions``) the first time the emulator installs, and reused after. The
cache folder is keyed by the sources' content (not the checkout's path: the sources are
copied into it and built from there), so every checkout of one commit shares one build; a file
lock makes two processes that start at once build it once. The first build prints one line
on stderr naming the folder.

When it cannot be built (no C++ compiler, no ninja), the emulator still runs, with one
warning: every op runs through the Python kernel (``fallback.py``), every device is reachable by explicit index (``neuron:1``), selecting a current
device other than 0 and creating a ``torch.Generator(device="neuron")`` raise an error
that says why, and ``pin_memory()`` returns an unpinned copy.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import sys
from pathlib import Path

import torch

log = logging.getLogger("accel_neuron.emulator")

_NAME = "accel_neuron_emulator_guard"
_CSRC = Path(__file__).with_name("csrc")
#: The C++ sources compiled into the library (every ``csrc/*.cpp``, in this order).
_SOURCES = [
    _CSRC / name
    for name in (
        "device_guard.cpp",
        "runtime.cpp",
        "allocator.cpp",
        "cow.cpp",
        "storage_ops.cpp",
        "device_allocator.cpp",
        "views.cpp",
        "plans.cpp",
        "kernels.cpp",
        "typed_kernels.cpp",
        "storage_setters.cpp",
        "islands.cpp",
        "dropout.cpp",
        "sdpa.cpp",
        "registration.cpp",
    )
]
#: The headers they include: copied next to them and part of the cache folder's key, not compiled.
_HEADERS = [_CSRC / "emulator.h"]
#: Compiler flags (part of the cache folder's key). Hidden visibility: calls between the files stay
#: direct (no PLT); the extern "C" entry points are exported in the sources.
_CFLAGS = ["-O2", "-fvisibility=hidden"]

_lib: ctypes.CDLL | None = None
_pylib: ctypes.PyDLL | None = None
_failure: str | None = None


def _build_directory() -> Path:
    """The cache folder of this build: keyed by torch's build, Python's version and the sources' content.

    Not by the checkout's path: every checkout (or install) of the same sources uses one folder.
    """
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "torch_extensions"
    )
    # the build's commit, not __version__: the library depends on the binary, and a reported version
    # can be faked (the emulator's untested-release test does) without rebuilding
    build = getattr(torch.version, "git_version", None) or torch.__version__
    # and the sources' (and flags') hash: checkouts with other sources (another branch, an older install)
    # get their own folder instead of rebuilding one library in turn
    content = b"".join(s.read_bytes() for s in [*_SOURCES, *_HEADERS]) + " ".join(_CFLAGS).encode()
    digest = hashlib.sha256(content).hexdigest()[:12]
    tag = f"torch{build[:12]}-py{sys.version_info[0]}{sys.version_info[1]}-src{digest}".replace("+", "_")
    path = Path(root) / f"{_NAME}-{tag}"
    path.mkdir(parents=True, exist_ok=True)
    return path


#: Written into the build folder once the library is built and loaded: later processes load it as is.
_BUILT = "built"


def _sources_in(directory: Path) -> list[Path]:
    """The C++ sources, copied into `directory`/src with their headers (written only when missing or different).

    cpp_extension writes the sources' absolute paths into build.ninja: building from copies at
    one path per content keeps build.ninja identical for every checkout, so none rebuilds another's.
    Returns the copies of the sources (the headers are found next to them).
    """
    from accel_abstraction.safe_io import atomic_write

    folder = directory / "src"
    folder.mkdir(exist_ok=True)
    copies = []
    for source in [*_SOURCES, *_HEADERS]:
        copy, data = folder / source.name, source.read_bytes()
        if not copy.exists() or copy.read_bytes() != data:
            atomic_write(copy, data, what="the neuron emulator's C++ source")
        copies.append(copy)
    return copies[: len(_SOURCES)]


def _compile(sources: list[Path], directory: Path) -> None:
    """Compile `sources` into `directory`/<name>.so with torch's C++ extension builder (and load it)."""
    from torch.utils import cpp_extension

    cpp_extension.load(
        name=_NAME,
        sources=[str(s) for s in sources],
        build_directory=str(directory),
        extra_cflags=_CFLAGS,
        is_python_module=False,
        verbose=False,
    )


def _build() -> str:
    """Compile the C++ core once per cache folder (one line on stderr when it does) and return its path.

    A process that finds the folder built loads the library without calling the compiler; two
    processes that find it unbuilt build it once: the second waits on the lock, then finds it built.
    """
    from accel_abstraction.safe_io import atomic_write, dir_lock

    directory = _build_directory()
    library = directory / f"{_NAME}.so"
    with dir_lock(directory, "neuron emulator build", wait=900.0):
        if not (library.exists() and (directory / _BUILT).exists()):
            print(
                f"accel-neuron: building the neuron emulator's C++ core (once per torch build and source "
                f"version, 1-2 minutes); cache: {directory}",
                file=sys.stderr,
                flush=True,
            )
            # cpp_extension's own lock file, left behind by a build that was killed: with ours held, stale
            (directory / "lock").unlink(missing_ok=True)
            _compile(_sources_in(directory), directory)
            atomic_write(directory / _BUILT, f"{library.name}\n", what="the neuron emulator's build marker")
    return str(library)


def load() -> bool:
    """Build (or reuse) and load the C++ core once; False (reason kept, one warning) when it cannot."""
    global _lib, _pylib, _failure, _stat_names, _max_devices
    if _lib is not None or _failure is not None:
        return _lib is not None
    try:
        path = _build()
        lib = ctypes.CDLL(path)
        lib.accel_neuron_emulator_register_guard.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_set_current_device.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_enable_fast_path.argtypes = [ctypes.c_char_p] * 4
        lib.accel_neuron_emulator_enable_native_sdpa.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_enable_native_islands.argtypes = [ctypes.c_char_p]
        lib.accel_neuron_emulator_last_error.restype = ctypes.c_char_p
        for name in ("memory_get", "memory_set"):
            getattr(lib, f"accel_neuron_emulator_{name}").argtypes = [
                ctypes.c_int,
                ctypes.POINTER(ctypes.c_int64),
                ctypes.c_int,
            ]
        lib.accel_neuron_emulator_stat_names.restype = ctypes.c_char_p
        lib.accel_neuron_emulator_reset_peak_stats.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_reset_accumulated_stats.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_set_memory_capacity.argtypes = [
            ctypes.c_int64,
            ctypes.c_char_p,
            ctypes.c_char_p,
        ]
        lib.accel_neuron_emulator_device_used.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_path_counts.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        lib.accel_neuron_emulator_set_seed_mixing.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_current_stream.argtypes = [ctypes.c_int]
        lib.accel_neuron_emulator_current_stream.restype = ctypes.c_int64
        lib.accel_neuron_emulator_set_current_stream.argtypes = [ctypes.c_int, ctypes.c_int64]
        lib.accel_neuron_emulator_new_stream.restype = ctypes.c_int64
        # The same library again: these entry points hold the GIL and raise Python errors.
        pylib = ctypes.PyDLL(path)
        for name in ("set_default_generators", "cpu_generator"):
            fn = getattr(pylib, f"accel_neuron_emulator_{name}")
            fn.argtypes = [ctypes.py_object]
            fn.restype = ctypes.py_object
    except Exception as exc:  # any build or load failure: run without it, and say why when it matters
        _failure = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
        log.warning(
            "neuron emulator: its C++ core could not be built (%s); running without it: every op takes the "
            "pure-Python per-op path (slower), neuron:0 stays the current device (neuron:1.. work by explicit index), torch.Generator(device='neuron') is "
            "unavailable and pin_memory() returns an unpinned copy",
            _failure,
        )
        return False
    _lib, _pylib = lib, pylib
    _stat_names = tuple(lib.accel_neuron_emulator_stat_names().decode().split())
    _max_devices = int(lib.accel_neuron_emulator_max_devices())
    return True


def register(count: int) -> bool:
    """Register the C++ core's device guard (`count` devices) and PrivateUse1 hooks; False without the core.

    PyTorch accepts PrivateUse1 hooks once per process: with the core loaded, the Python
    backend registration must not register Python hooks (``registration.py``).
    """
    if not load():
        return False
    assert _lib is not None
    _lib.accel_neuron_emulator_register_guard(count)
    _lib.accel_neuron_emulator_register_hooks()
    return True


def library() -> ctypes.CDLL | None:
    """The loaded C++ core, or None when it could not be built."""
    return _lib


def python_library() -> ctypes.PyDLL | None:
    """The C++ core's entry points that take or return Python objects, or None when it could not be built."""
    return _pylib


def failure() -> str | None:
    """Why the C++ core could not be built (None when it was, or was not tried)."""
    return _failure


#: Environment variable choosing the per-op path: ``native`` (default: the compiled kernel when the
#: C++ core is built) or ``python`` (every op through ``fallback.py``, as without a compiler).
_HOT_PATHS = ("native", "python")


# Read from the loaded library (csrc/emulator.h's kMaxDevices and ACCEL_NEURON_EMU_STATS), not kept here.
_max_devices = 0
_stat_names: tuple[str, ...] = ()


def max_devices() -> int:
    """Devices the compiled per-op path keeps memory statistics for (the C++ core's ``kMaxDevices``).

    0 when the core is not loaded.
    """
    return _max_devices


def stat_names() -> tuple[str, ...]:
    """The memory statistics the C++ core keeps per device, in its order (``memory._KEYS``'s names).

    Empty when the core is not loaded.
    """
    return _stat_names


def hot_path(count: int = 1) -> str:
    """The per-op path this process uses: ``native`` or ``python``.

    ``native`` when the C++ core is loaded and ``ACCEL_NEURON_EMULATOR_HOT_PATH`` is unset or
    ``native``; ``python`` when it is ``python``, the core could not be built, or more than
    :func:`max_devices` devices (`count`) are emulated. Read once at install.
    """
    from accel_abstraction.environment import read

    from ..settings import HOT_PATH

    value = (read(HOT_PATH) or "native").strip().lower() or "native"
    if value not in _HOT_PATHS:
        from .errors import EmulatorError

        raise EmulatorError(
            f"{HOT_PATH.name}={value!r} (environment) is not one of {', '.join(_HOT_PATHS)}: "
            "set it to 'native' (the compiled per-op path) or 'python' (the pure-Python one)"
        )
    if value == "python" or not load():
        return "python"
    if count > max_devices():
        log.warning(
            "neuron emulator: %d devices, the compiled per-op path serves up to %d: using the Python one",
            count,
            max_devices(),
        )
        return "python"
    return "native"


def _checked(entry: str, could_not: str, *args: object) -> None:
    """Call the core's C entry point ``accel_neuron_emulator_<entry>``; a non-zero status raises
    EmulatorError saying that the emulator could not `could_not`, with the core's last error."""
    from .errors import EmulatorError

    assert _lib is not None
    if getattr(_lib, f"accel_neuron_emulator_{entry}")(*args) != 0:
        detail = _lib.accel_neuron_emulator_last_error().decode()
        raise EmulatorError(f"the neuron emulator could not {could_not}: {detail}")


def enable_fast_path(
    slow_ops: list[str], copy_ops: list[str], views: list[str], explicit_ops: list[str]
) -> None:
    """Register the compiled per-op kernel: the PrivateUse1 fallback and the `explicit_ops` overloads.

    `slow_ops`: op names (``aten::set_``) always handed to the Python kernel on PrivateUse3;
    `copy_ops`: op names whose arguments may sit on the CPU or other devices (``aten::copy_``);
    `views`: overloads (``view.dtype``) whose CPU kernel runs on the neuron tensor itself.
    """
    tables = ("\n".join(names).encode() for names in (slow_ops, copy_ops, views, explicit_ops))
    _checked("enable_fast_path", "register its compiled per-op kernel", *tables)


def enable_native_dropout() -> None:
    """Register the C++ core's ``aten::dropout``/``dropout_`` kernels (the CPU's decomposition) on neuron."""
    _checked("enable_native_dropout", "register its compiled dropout kernels")


def enable_native_islands(names: list[str]) -> None:
    """The C++ core's islands (``csrc/islands.cpp``) for aten overloads `names`: see ``cpu_islands.register``."""
    _checked("enable_native_islands", "register its compiled island kernels", "\n".join(names).encode())


def enable_native_sdpa(on: bool = True) -> None:
    """Give ATen's SDPA chooser a neuron entry that answers as the CPU's (``csrc/sdpa.cpp``), or take it back.

    With it, ``scaled_dot_product_attention`` on neuron runs ATen's C++ composite with the CPU's
    kernel choice, instead of the Python kernel ``composite_overrides._sdpa``.
    """
    _checked("enable_native_sdpa", "register its SDPA kernel chooser", int(on))


def memory_get(index: int) -> dict[str, int]:
    """The C++ core's memory statistics of device `index`, by name (:func:`stat_names`)."""
    out = (ctypes.c_int64 * len(_stat_names))()
    _checked("memory_get", f"read the memory statistics of neuron:{index}", index, out, len(_stat_names))
    return dict(zip(_stat_names, out, strict=True))


def memory_set(index: int, values: dict[str, int]) -> None:
    """Overwrite the C++ core's memory statistics of device `index` (`values`: every name of :func:`stat_names`)."""
    row = (ctypes.c_int64 * len(_stat_names))(*(values[name] for name in _stat_names))
    _checked("memory_set", f"set the memory statistics of neuron:{index}", index, row, len(_stat_names))


def register_device_allocator() -> None:
    """Register the C++ core's c10 device allocator for PrivateUse1 (torch.accelerator's memory functions read it)."""
    _checked("register_device_allocator", "register its c10 device allocator")


def reset_peak(index: int) -> None:
    """Set the peak statistics of device `index` to the current values, in the C++ core."""
    _checked("reset_peak_stats", f"reset the peak memory statistics of neuron:{index}", index)


def reset_accumulated(index: int) -> None:
    """Zero the accumulated memory statistics (ever allocated, freed, OOMs) of device `index`, in the C++ core."""
    _checked("reset_accumulated_stats", f"reset the memory statistics of neuron:{index}", index)


def memory_capacity(nbytes: int, device_message: str, host_message: str) -> None:
    """Give every device `nbytes` of memory in the C++ core, with the out-of-memory messages to raise.

    The messages are ``memory.py``'s templates; the core fills their ``{size}``, ``{index}``,
    ``{total}``, ``{free}``, ``{allocated}`` (and ``{reason}``) fields.
    """
    assert _lib is not None
    _lib.accel_neuron_emulator_set_memory_capacity(nbytes, device_message.encode(), host_message.encode())


def device_used(set_to: bool | None = None) -> bool:
    """Whether the C++ core made a neuron storage (since the flag was last set); sets it if `set_to` is given."""
    assert _lib is not None
    return bool(_lib.accel_neuron_emulator_device_used(-1 if set_to is None else int(set_to)))


def path_counts() -> tuple[int, int]:
    """How many op calls took the compiled path and how many the Python one (since the core loaded)."""
    assert _lib is not None
    out = (ctypes.c_int64 * 2)()
    _lib.accel_neuron_emulator_path_counts(out)
    return out[0], out[1]
