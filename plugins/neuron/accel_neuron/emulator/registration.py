"""Register the emulated device with PyTorch: name, device module, hooks, kernels.

Everything here touches private PyTorch 2.13 interfaces; the emulator's test
suite is the check that they still behave after a PyTorch upgrade.
"""

from __future__ import annotations

import torch

from . import (
    compiled_storage,
    device_module,
    devices,
    fallback,
    kernel_keys,
    memory,
    native,
    python_cow,
    python_storage,
    rng,
    routing,
    storage,
)

_libs: list[torch.library.Library] = []  # kept alive: dropping a Library unregisters its kernels


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    """PrivateUse1 hooks: the emulated device is built and available."""

    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):
    """Device guard. PyTorch's Python guard only lets a backend name its type: in C++ it reports
    device 0 and one device whatever Python says, so the emulator keeps the current device itself
    (``devices.py``) and routes the Python entry points that would ask C++ (``limits.py``).
    """

    def type_(self):
        return torch._C._autograd.DeviceType.PrivateUse1


def _name_device(python_hooks: bool) -> None:
    """What ``torch.utils.backend_registration._setup_privateuseone_for_python_backend`` does, except
    that Python hooks are registered only when ``python_hooks``: PyTorch takes PrivateUse1 hooks once
    per process, and the C++ core (``native.py``) registers its own when it is loaded."""
    torch.utils.rename_privateuse1_backend("neuron")
    torch.utils.generate_methods_for_privateuse1_backend()
    torch._register_device_module("neuron", device_module)
    if python_hooks:
        torch._C._acc.register_python_privateuseone_hook(_Hooks())
    torch._C._acc.register_python_privateuseone_device_guard(_Guard())


def _composite_ops_without_kernel() -> list[str]:
    """Names of ops whose CompositeExplicitAutograd kernel would beat the PrivateUse1 fallback."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    names = set(torch._C._dispatch_get_registrations_for_dispatch_key("CompositeExplicitAutograd"))
    names |= set(
        torch._C._dispatch_get_registrations_for_dispatch_key("CompositeExplicitAutogradNonFunctional")
    )
    out = []
    for name in sorted(names):
        if not name.startswith("aten::") or has(name, "PrivateUse1"):
            continue
        try:
            op = _overload(name)
        except AttributeError:
            continue
        if routing.keeps_decomposition(name, torch.Tag.inplace_view in op.tags):
            continue
        schema = op._schema
        if schema.returns and all(r.alias_info is not None for r in schema.returns):
            # Views and in-place ops on metadata (detach, alias, permute, t_, ...): their C++
            # composite kernels only make new TensorImpls over the same storage, which is right
            # for neuron tensors too, and keeps Python objects out of nn.Parameter/as_subclass.
            if not any(r.alias_info.is_write for r in schema.returns):
                continue
        out.append(name)
    return out


def _overload(qualname: str):
    ns_name, _, overload = qualname.partition(".")
    name = ns_name.split("::", 1)[1]
    packet = getattr(torch.ops.aten, name)
    return getattr(packet, overload or "default")


def register(count: int, source: str) -> None:
    """Rename PrivateUse1 to `neuron` and install the device module (`count` devices), hooks and kernels."""
    _name_device(python_hooks=not native.load())
    devices.configure(count, source)
    rng.install(count)
    memory.ensure(count)
    compiled = native.hot_path(count) == "native"
    # The one choice of who keeps the storage bookkeeping, made before any neuron tensor exists:
    # with the compiled path the C++ core does, for storages made on either path.
    storage.select(compiled_storage.path() if compiled else python_storage.PATH)
    if compiled:
        kernel_keys.use_compiled_path()
        memory.use_native(native)
        device_module.read_first_use_from(native.device_used)
    else:
        python_cow.register()  # the materializer of copy-on-write storages calls back into Python
    key = kernel_keys.kernel_key()

    lib = torch.library.Library("_", "IMPL")
    lib.fallback(fallback.fallback_kernel, key)
    _libs.append(lib)

    aten = torch.library.Library("aten", "IMPL")
    _libs.append(aten)
    from . import kernels

    special = kernels.special_kernels()
    for name, fn in special.items():
        # device-agnostic views and set_ with a storage: with the compiled path its own kernel comes first
        aten.impl(name, fn, key if name in routing.COMPILED_OWN_KERNELS else "PrivateUse1")
    for qualname in _composite_ops_without_kernel():
        short = qualname.split("::", 1)[1]
        if short in special:
            continue
        try:
            op = _overload(qualname)
        except AttributeError:
            continue
        kernel_keys.register_generic(aten, short, op)

    from . import autocast_policy, compile, composite_overrides, flex_attention, limits, stream_ops

    composite_overrides.register(aten, compiled)
    stream_ops.register(aten)
    if compiled:
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        # an op given a Python PrivateUse1 kernel after its generic one keeps it, as on the Python path
        explicit = sorted({n for n in kernel_keys.native_ops if not has(f"aten::{n}", "PrivateUse1")})
        python_only, copies, views = routing.compiled_path_tables()
        native.enable_fast_path(python_only, copies, views, explicit + views + list(routing.STORAGE_SETTERS))
    _libs.extend(autocast_policy.register())
    limits.patch()
    compile.patch()
    flex_attention.patch()
