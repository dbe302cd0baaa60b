"""Whether the installed torch can host the emulated device: capability probes, not a version list.

The emulator is built on private PyTorch interfaces (PrivateUse1 registration from Python,
tensors over foreign storage, dispatcher introspection, DLPack import). Whether a release
still offers them is checked, not assumed from its number:

* :func:`hook_probes` (no side effects, cheap): every private hook the emulator uses exists
  with the shape it needs. Run by the backend's ``availability()`` and by ``install()``.
* :func:`self_test_probes` (after registration): a few ops, the RNG and a tied/lazy module's
  ``.to()`` on the device, compared with the CPU bit for bit.

A release whose probes pass runs; one outside :data:`TESTED_TORCH` gets one warning naming
it (:class:`UntestedTorchWarning`); a failing probe refuses with
:class:`~accel_neuron.emulator.errors.EmulatorProbeError` naming it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = [
    "TESTED_TORCH",
    "ProbeResult",
    "UntestedTorchWarning",
    "first_failure",
    "hook_probes",
    "release_status",
    "self_test_probes",
    "warn_if_untested",
]

#: torch releases the emulator's whole suite (conformance, real models, the main job) has passed
#: on, oldest first; a release counts as tested when its minor version (2.14.x) is here. The only
#: list of them: ``accel info``, the errors' hints and ``nox -s torch_newest`` (the last entry)
#: read it from here. How to add one: docs/install.md, "A new torch release".
TESTED_TORCH: tuple[str, ...] = ("2.13.0", "2.14.1", "2.15.0")


class UntestedTorchWarning(UserWarning):
    """The installed torch is not a release the emulator was tested on (its probes passed)."""


@dataclass(frozen=True)
class ProbeResult:
    """One probe: its name, whether it passed, and what failed (empty when it passed)."""

    name: str
    ok: bool
    detail: str = ""


def minor(version: str | None = None) -> str:
    """``"2.15.0+cu130"`` -> ``"2.15"`` (default: the installed torch)."""
    return ".".join((version or torch.__version__).split("+")[0].split(".")[:2])


def release_status(version: str | None = None) -> str:
    """``"tested"`` (same minor as a :data:`TESTED_TORCH` entry), ``"newer"`` (than the newest), ``"older"`` or ``"untested"``."""
    mine = minor(version)
    tested = [minor(v) for v in TESTED_TORCH]
    if mine in tested:
        return "tested"
    key = _key(mine)
    if key > max(_key(v) for v in tested):
        return "newer"
    if key < min(_key(v) for v in tested):
        return "older"
    return "untested"


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


_warned = False


def warn_if_untested(version: str | None = None) -> None:
    """Warn once per process when the installed torch is not in :data:`TESTED_TORCH`."""
    global _warned
    status = release_status(version)
    if status == "tested" or _warned:
        return
    _warned = True
    where = "newer than the newest release" if status == "newer" else "not a release"
    warnings.warn(
        f"torch {version or torch.__version__} is {where} the neuron emulator was tested on "
        f"({', '.join(TESTED_TORCH)}); its capability probes passed, so the emulated device runs. "
        "Run the emulator's suite (nox -s torch_release -- VERSION) before relying on it.",
        UntestedTorchWarning,
        stacklevel=3,
    )


# ---------------------------------------------------------------- hook probes (no side effects)


def _resolve(path: str) -> object:
    """``"torch._C._acc.create_empty_tensor"`` -> the object, importing modules only where needed."""
    parts = path.split(".")
    obj: object = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        obj = importlib.import_module(".".join(parts[: i + 1]))
    return obj


def _exists(*paths: str) -> Callable[[], str]:
    def check() -> str:
        missing = []
        for path in paths:
            try:
                _resolve(path)
            except (AttributeError, ImportError):
                missing.append(path)
        return f"missing {', '.join(missing)}" if missing else ""

    return check


def _module_exists(*names: str) -> Callable[[], str]:
    """torch modules imported lazily (``torch._dynamo`` costs seconds): their files found, nothing imported."""

    def check() -> str:
        root = Path(torch.__file__).parent
        missing = []
        for name in names:
            path = root.joinpath(*name.split(".")[1:])
            if not (path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()):
                missing.append(name)
        return f"missing module {', '.join(missing)}" if missing else ""

    return check


def _registration() -> str:
    missing = _exists(
        "torch.utils.backend_registration._setup_privateuseone_for_python_backend",
        "torch._C._acc.PrivateUse1Hooks",
        "torch._C._acc.DeviceGuard",
        "torch._C._get_privateuse1_backend_name",
    )()
    if missing:
        return missing
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend as setup

    params = inspect.signature(setup).parameters
    absent = [p for p in ("backend_module", "hook", "device_guard") if p not in params]
    return f"_setup_privateuseone_for_python_backend takes no {', '.join(absent)}" if absent else ""


def _set_storage_redispatch() -> str:
    missing = _exists("torch.ops.aten.set_.source_Storage_storage_offset", "torch.ops.aten.alias.default")()
    if missing:
        return missing
    handle = getattr(torch.ops.aten.set_.source_Storage_storage_offset, "_handle", None)
    return "" if hasattr(handle, "redispatch_boxed") else "OpOverload._handle.redispatch_boxed is gone"


#: name -> check (returns "" when the hook is there, else what is missing). One row per
#: private interface the emulator's modules use; the module that needs it is in the comment.
HOOKS: dict[str, Callable[[], str]] = {
    # registration.py: PrivateUse1 renamed, Python hooks and device guard
    "privateuse1 registration": _registration,
    # python_storage.py: empty PrivateUse1 tensors over CPU memory
    "storage from a data pointer": _exists(
        "torch._C._acc.create_empty_tensor",
        "torch._C._construct_storage_from_data_pointer",
        "torch._C.StorageBase.__new__",
        "torch._C._set_conj",
        "torch._C._set_neg",
    ),
    # storage.py, python_storage.py, kernels.py: CPU kernels reached below the PrivateUse1 key
    "redispatch below PrivateUse1": _set_storage_redispatch,
    # python_storage.py: tensors on neuron:1 and up through DLPack's kDLExtDev
    "dlpack import": _exists("torch._C._to_dlpack", "torch._C._from_dlpack"),
    # registration.py, composite_overrides.py: which ops would decompose instead of reaching the fallback
    "dispatcher introspection": _exists(
        "torch._C._dispatch_has_kernel_for_dispatch_key",
        "torch._C._dispatch_get_registrations_for_dispatch_key",
        "torch.library.Library.fallback",
    ),
    # autocast_policy.py
    "autocast key": _exists(
        "torch._C.DispatchKey.AutocastPrivateUse1",
        "torch._C._ExcludeDispatchKeyGuard",
        "torch.library.fallthrough_kernel",
    ),
    # autograd_threads.py
    "autograd threads": _exists(
        "torch._C._set_multithreading_enabled",
        "torch._C._is_multithreading_enabled",
        "torch.autograd._engine_run_backward",
        "torch.autograd.graph._engine_run_backward",
    ),
    # accel_abstraction.module_apply (tied and lazy parameters through .to())
    "module conversion": _exists(
        "torch._has_compatible_shallow_copy_type",
        "torch.nn.Module._apply",
        "torch.nn.parameter.UninitializedParameter",
    ),
    # compile.py (imported at the first torch.compile only)
    "compile device interface": _module_exists("torch._dynamo.device_interface", "torch._dynamo.backends.debugging"),
}


def _run(name: str, check: Callable[[], str]) -> ProbeResult:
    try:
        detail = check()
    except Exception as exc:  # a probe that raises is a failed probe, with the exception as its detail
        detail = f"{type(exc).__name__}: {exc}"
    return ProbeResult(name, not detail, detail)


@functools.cache
def _hook_probes(version: str) -> tuple[ProbeResult, ...]:
    return tuple(_run(name, check) for name, check in HOOKS.items())


def hook_probes() -> tuple[ProbeResult, ...]:
    """Every entry of :data:`HOOKS` against the installed torch (computed once per process)."""
    return _hook_probes(torch.__version__)


def first_failure(results: tuple[ProbeResult, ...] | list[ProbeResult]) -> ProbeResult | None:
    """The first failed probe, or None."""
    return next((r for r in results if not r.ok), None)


# ---------------------------------------------------------------- self-test (after registration)


def _same(name: str, cpu: torch.Tensor, dev: torch.Tensor) -> str:
    if dev.device.type != "neuron":
        return f"{name} came back on {dev.device}, not neuron"
    back = dev.cpu()
    if back.dtype != cpu.dtype or back.shape != cpu.shape or not torch.equal(back, cpu):
        return f"{name} differs from the CPU result"
    return ""


def _ops() -> str:
    x = torch.linspace(-2.0, 2.0, 24).reshape(4, 6)
    d = x.to("neuron")
    checks = [
        ("matmul+add+relu", (x @ x.T + 1).relu(), (d @ d.T + 1).relu()),
        ("sum over a dim", x.sum(0), d.sum(0)),
        ("softmax", x.softmax(-1), d.softmax(-1)),
    ]
    for name, cpu, dev in checks:
        if problem := _same(name, cpu, dev):
            return problem
    view = d[1:3]
    view.add_(1)  # in place through a view: must reach the base's storage
    if problem := _same("in-place add through a view", torch.cat([x[:1], x[1:3] + 1, x[3:]]), d):
        return problem
    return ""


def _rng() -> str:
    neuron = torch.neuron  # type: ignore[attr-defined]
    neuron.manual_seed(1234)
    state = neuron.get_rng_state()
    a = torch.randn(8, device="neuron")
    drop_a = torch.nn.functional.dropout(torch.ones(16, device="neuron"), 0.5)
    neuron.set_rng_state(state)
    b = torch.randn(8, device="neuron")
    drop_b = torch.nn.functional.dropout(torch.ones(16, device="neuron"), 0.5)
    if not (torch.equal(a.cpu(), b.cpu()) and torch.equal(drop_a.cpu(), drop_b.cpu())):
        return "the same generator state drew different numbers (randn or dropout)"
    generator = torch.Generator().set_state(neuron.get_rng_state())
    if not torch.equal(torch.randn(8, generator=generator), torch.randn(8, device="neuron").cpu()):
        return "randn on neuron does not draw the CPU kernel's numbers from its generator's state"
    return ""


class _TiedLazy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(5, 4)
        self.head = torch.nn.Linear(4, 5, bias=False)
        self.head.weight = self.embed.weight
        self.lazy = torch.nn.LazyLinear(3)


def _tied_to() -> str:
    from accel_abstraction import module_apply

    owner = "accel-neuron self-test"
    module_apply.enable(owner)
    try:
        model = _TiedLazy().to("neuron")
    finally:
        module_apply.disable(owner)
    if model.head.weight is not model.embed.weight:
        return "a tied weight became two parameters after .to('neuron')"
    if model.embed.weight.device.type != "neuron":
        return f"the tied weight is on {model.embed.weight.device} after .to('neuron')"
    lazy = model.lazy.weight
    if not isinstance(lazy, torch.nn.parameter.UninitializedParameter) or lazy.device.type != "neuron":
        return "a lazy parameter is no longer uninitialized (or not on neuron) after .to('neuron')"
    return ""


def _second_device() -> str:
    count = torch.neuron.device_count()  # type: ignore[attr-defined]
    if count < 2:
        return ""
    t = torch.arange(3.0).to(f"neuron:{count - 1}")
    if t.device.index != count - 1 or not torch.equal(t.cpu(), torch.arange(3.0)):
        return f"a tensor moved to neuron:{count - 1} landed on {t.device}"
    return ""


#: name -> check, run once on the freshly registered device by ``install()``.
SELF_TEST: dict[str, Callable[[], str]] = {
    "self-test: ops": _ops,
    "self-test: rng": _rng,
    "self-test: tied and lazy .to()": _tied_to,
    "self-test: second device": _second_device,
}


def self_test_probes() -> tuple[ProbeResult, ...]:
    """Every entry of :data:`SELF_TEST` on the installed emulator.

    Leaves the devices' RNG states and ``torch.neuron.is_initialized()`` as it found them and
    resets their peak and accumulated memory statistics (the self-test's tensors are freed on
    return): a process looks as if the device had not been used yet.
    """
    from . import device_module

    neuron = torch.neuron  # type: ignore[attr-defined]
    initialized = device_module.is_initialized()  # DeviceMesh sets a rank's device only if none was used
    states = [neuron.get_rng_state(i) for i in range(neuron.device_count())]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # LazyLinear's "lazy modules are a new feature" and the like
            return tuple(_run(name, check) for name, check in SELF_TEST.items())
    finally:
        for i, state in enumerate(states):
            neuron.set_rng_state(state, i)
            neuron.reset_peak_memory_stats(i)  # the self-test's tensors are not the user's
            neuron.reset_accumulated_memory_stats(i)
        device_module.set_initialized(initialized)
