"""What a backend can do, declared explicitly (:class:`Capabilities`) and whether it can run here (:class:`Availability`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["Availability", "Capabilities"]


@dataclass(frozen=True)
class Availability:
    """Whether a backend can run in this process, and if not, why and what to do.

    ``reason`` is written for a user ("torch was built without CUDA support"), ``hint``
    says how to fix it ("install a CUDA build of torch: ..."). ``traceback`` keeps the
    formatted exception when availability was decided by an import or probe failing.
    """

    available: bool
    reason: str = ""
    hint: str = ""
    traceback: str | None = None

    @classmethod
    def yes(cls) -> Availability:
        return cls(True)

    @classmethod
    def no(cls, reason: str, hint: str = "", traceback: str | None = None) -> Availability:
        return cls(False, reason, hint, traceback)


@dataclass(frozen=True)
class Capabilities:
    """Features a backend supports. Asking a backend for one it lacks raises ``CapabilityError``.

    Boolean fields are the features the public API knows about; ``extras`` holds
    backend-specific ones (for example ``{"mark_step": True}``), queried by name through
    :meth:`supports` just like the built-in ones.

    ``memory_source`` says what the memory statistics measure where ``memory_stats`` is
    true: ``"allocator"`` (bytes held by the device's tensor allocator, as ``torch.cuda``
    reports them) or ``"process"`` (the process's resident set size and its peak: the cpu
    backend, whose allocator keeps no statistics).

    ``accelerator`` says whether the device is an accelerator distinct from the host CPU,
    as ``torch.accelerator.is_available()`` would answer for it: true for a GPU or an
    (even emulated) accelerator device, false for a backend that runs on the host CPU.
    ``accel.is_accelerator_available()`` answers from it, and ``accel port`` turns
    ``torch.cuda.is_available()`` into that question, so a ported program takes its CPU
    branch on the cpu backend as it did on a machine without CUDA.
    """

    streams: bool = False
    events: bool = False
    memory_stats: bool = False
    fp16: bool = False
    bf16: bool = False
    fp8: bool = False
    graphs: bool = False
    pinned_memory: bool = False
    deterministic: bool = True
    benchmark: bool = False
    tf32: bool = False
    distributed: bool = True
    visible_devices: bool = False
    accelerator: bool = True
    compile_backend: str | None = "inductor"
    memory_source: str = "allocator"
    extras: Mapping[str, bool] = field(default_factory=dict)

    def supports(self, feature: str) -> bool:
        """True if ``feature`` (a field name or an ``extras`` key) is supported."""
        if feature in self.extras:
            return bool(self.extras[feature])
        if feature in _FLAGS:
            return bool(getattr(self, feature))
        if feature == "compile":
            return self.compile_backend is not None
        return False

    def known_features(self) -> list[str]:
        """Every feature name :meth:`supports` understands."""
        return [*_FLAGS, "compile", *sorted(self.extras)]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (used by ``accel info --json``)."""
        data = asdict(self)
        data["extras"] = dict(self.extras)
        return data


#: The boolean feature fields of :class:`Capabilities`, in declaration order.
_FLAGS: tuple[str, ...] = tuple(f.name for f in fields(Capabilities) if f.type == "bool")
