"""The public API of ``accel_abstraction``, declared once: every name and how it is served.

One row per public name. From this table follow:

- ``accel_abstraction.__all__`` (so ``from accel_abstraction import *`` exports the API and
  nothing else);
- the names :mod:`.runtime` rebinds to the selected backend (:data:`BOUND`);
- the lazy stubs that select a backend on first call (``accel_abstraction._STUBS``: every
  :data:`BOUND` and :data:`STATE` name must have its documented stub in ``__init__``);
- the names served from submodules on first access (:data:`LAZY`);
- the argument checks of :mod:`.arguments` (the ``guard`` column).

``tests/core/test_api_table.py`` fails when the stubs, the :class:`~.interface.Backend`
methods or the guards drift from the table. Adding a public function: one row here, its
stub in ``__init__`` (signature and docstring), and its method on ``Backend`` if it is bound.
This module imports nothing heavy: ``import accel_abstraction`` reads it.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["API", "ALL", "BOUND", "GUARDS", "LAZY", "STATE", "Row"]

Kind = Literal["select", "state", "bound", "lazy"]


class Row(NamedTuple):
    """One public name of ``accel_abstraction``."""

    name: str
    kind: Kind
    """``select``: a function choosing the backend (``use``); ``state``: a function answering from
    the selection itself (``backend()``); ``bound``: rebound to the selected backend's attribute of
    the same name at selection; ``lazy``: imported from ``module`` on first access."""
    module: str = ""
    """For ``lazy``: the submodule (relative to the package) that defines the name."""
    guard: str = ""
    """For ``bound``: the argument check :mod:`.arguments` wraps the bound callable in (``""``: none)."""


def _bound(*names: str, guard: str = "") -> tuple[Row, ...]:
    return tuple(Row(name, "bound", guard=guard) for name in names)


def _lazy(module: str, *names: str) -> tuple[Row, ...]:
    return tuple(Row(name, "lazy", module) for name in names)


API: tuple[Row, ...] = (
    # selection
    Row("use", "select"),
    Row("configure", "select"),
    Row("using", "select"),
    Row("backend", "state"),
    Row("device_type", "state"),
    *_bound("is_available", "is_accelerator_available", "capabilities"),
    # devices
    *_bound("device_count", "current_device", "set_device", "device", "device_name"),
    *_lazy("device_tests", "is_accelerator_device"),
    # execution (Stream and Event are the backend's classes where it has them)
    *_bound("synchronize", "current_stream", "stream", "Stream", "Event"),
    # memory
    *_bound(
        "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
        "reset_peak_memory_stats", "empty_cache", "memory_stats", "mem_get_info",
    ),  # fmt: skip
    # RNG
    *_bound("manual_seed", "manual_seed_all", guard="seed"),
    *_bound("seed", "initial_seed", "get_rng_state"),
    *_bound("set_rng_state", guard="rng_state"),
    *_bound("get_rng_state_all"),
    *_bound("set_rng_state_all", guard="rng_states"),
    *_bound("fork_rng"),
    # AMP
    *_bound("is_bf16_supported", guard="bf16"),
    *_bound("autocast", "GradScaler", "is_fp16_supported", "supported_dtypes"),
    # numerics
    *_bound("set_deterministic", guard="deterministic"),
    *_bound("set_benchmark", "set_allow_tf32", guard="flag"),
    # distributed and data
    *_bound("dist_backend", "visible_devices_env", "pin_memory", "pin_memory_device"),
    *_lazy("distributed", "init_distributed", "destroy_distributed", "barrier", "is_main_process", "DistInfo"),
    *_lazy("distributed", "ddp_device_ids", "ddp_output_device", "fsdp_device_id"),
    # metrics, the runtime redirect
    *_lazy("metrics", "log_metric", "log_settings"),
    *_lazy("redirect", "redirect_cuda"),
    # for plugins and typing
    *_lazy("interface", "Backend"),
    *_lazy("registry", "BackendSpec"),
    *_lazy("features", "Capabilities", "Availability"),
    *_lazy("hookspecs", "hookimpl"),
    *_lazy("settings", "AccelSettings"),
    # errors
    *_lazy(
        "errors", "AccelError", "ArgumentTypeError", "ArgumentValueError", "BackendUnavailableError",
        "CapabilityError", "ConfigError", "DeviceIndexError", "PluginError", "UnknownBackendError",
    ),  # fmt: skip
    *_lazy("distributed", "DistributedError"),
)

#: Every public name, in table order: ``accel_abstraction.__all__``.
ALL: tuple[str, ...] = tuple(row.name for row in API)
#: Names rebound to the selected backend's attribute of the same name.
BOUND: tuple[str, ...] = tuple(row.name for row in API if row.kind == "bound")
#: Names answered from the selection itself (rebound by :mod:`.runtime` too).
STATE: tuple[str, ...] = tuple(row.name for row in API if row.kind == "state")
#: Name -> submodule, for the names served on first access.
LAZY: dict[str, str] = {row.name: row.module for row in API if row.kind == "lazy"}
#: Bound name -> its argument check (a key of ``arguments.CHECKS``).
GUARDS: dict[str, str] = {row.name: row.guard for row in API if row.guard}
