"""Fingerprints of a training step, module by module and op by op (``accel parity --locate``).

In the run's process (through :mod:`.launch`), at the steps asked for, every ``nn.Module``
call records a fingerprint of each tensor it returns (shape, dtype, mean, standard
deviation, min, max, count of non-finite values, and a BLAKE2 hash of the exact bytes), each
such output records the gradient that reaches it in the backward pass, and a
``TorchDispatchMode`` active while a module runs records every ATen op's outputs, tagged with
the innermost module running it. Entries are JSON lines in execution order, in the file named
by ``ACCEL_PARITY_FINGERPRINTS``::

    {"pos": 0, "kind": "module", "module": "TinyGPT.blocks.0.mlp.1", "type": "GELU", "call": 0,
     "out": 0, "shape": [16, 32, 256], "dtype": "float32", "mean": ..., "hash": "9f2c..."}
    {"pos": 0, "kind": "op", "module": "TinyGPT.blocks.0.mlp.1", "call": 0, "seq": 0, "op": "aten::gelu", ...}
    {"pos": 0, "kind": "grad", "module": "TinyGPT.head", "call": 0, "out": 0, ...}

``pos`` is the step's position among the steps the run logs (0 for its first), counted by
:func:`accel_abstraction.metrics.add_step_listener` or, for a run whose metrics come from its
output (``--metric REGEX``), by optimizer steps. ``ACCEL_PARITY_FINGERPRINT_STEPS`` is
``all`` or positions (``4,5``); ``ACCEL_PARITY_FINGERPRINT_STOP=1`` ends the run (exit 0)
once the last of them is written, so a re-run for ``--locate`` costs only the steps up to it.
The hooks are PyTorch's global module hooks (``torch.nn.modules.module``): the script is not
edited. Modules are named by their path from the outermost module called
(``named_modules``), prefixed by its class name.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Mapping
from typing import IO, Any

from ..environment import flag, read

__all__ = ["BOUNDARY_ENV", "FILE_ENV", "STEPS_ENV", "STOP_ENV", "Recorder", "fingerprint", "install_from_env"]

FILE_ENV = "ACCEL_PARITY_FINGERPRINTS"
STEPS_ENV = "ACCEL_PARITY_FINGERPRINT_STEPS"
STOP_ENV = "ACCEL_PARITY_FINGERPRINT_STOP"
BOUNDARY_ENV = "ACCEL_PARITY_FINGERPRINT_BOUNDARY"  # "metrics" (default) or "optimizer"

STATS = ("mean", "std", "min", "max")


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def fingerprint(tensor: Any) -> dict[str, Any]:
    """Shape, dtype, statistics and an exact hash of ``tensor`` (copied to the CPU to read it)."""
    import torch

    t = tensor.detach()
    out: dict[str, Any] = {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
    if t.device.type == "meta" or t.layout != torch.strided or t.is_quantized:
        out["hash"] = f"unreadable ({t.device.type}, {t.layout})"
        return out
    c = (t if t.device.type == "cpu" else t.cpu()).contiguous()
    out["hash"] = hashlib.blake2b(c.reshape(-1).view(torch.uint8).numpy().tobytes(), digest_size=16).hexdigest()
    if c.numel() == 0:
        return out
    v = c.abs() if c.is_complex() else c
    v = v.double()
    finite = torch.isfinite(v)
    out["nonfinite"] = int(v.numel() - int(finite.sum()))
    v = v[finite]
    if v.numel():
        out["mean"] = _finite_or_none(float(v.mean()))
        out["std"] = _finite_or_none(float(v.std())) if v.numel() > 1 else 0.0
        out["min"], out["max"] = float(v.min()), float(v.max())
    return out


def _positions(raw: str) -> set[int] | None:
    """``all`` -> None (every step); ``4,5`` -> {4, 5}."""
    raw = raw.strip()
    if raw in ("", "all"):
        return None
    return {int(part) for part in raw.split(",") if part.strip()}


class Recorder:
    """The hooks and the dispatch mode of one process; writes entries to ``sink``."""

    def __init__(self, sink: IO[str], positions: set[int] | None, stop: bool) -> None:
        self.sink = sink
        self.positions = positions
        self.stop = stop
        self.pos = 0
        self.names: dict[int, str] = {}
        self.stack: list[str] = []
        self.calls: dict[str, int] = {}
        self.ops: dict[tuple[str, int], int] = {}
        self.busy = False
        self.mode: Any = None
        self.lock = threading.Lock()

    @property
    def active(self) -> bool:
        return self.positions is None or self.pos in self.positions

    def write(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.sink.write(json.dumps(entry, allow_nan=False) + "\n")

    def record(self, kind: str, module: str, call: int, tensors: list[Any], **extra: Any) -> None:
        self.busy = True
        try:
            for i, t in enumerate(tensors):
                self.write({"pos": self.pos, "kind": kind, "module": module, "call": call, "out": i, **extra, **fingerprint(t)})
        finally:
            self.busy = False

    # ---- step boundaries

    def step_done(self, _step: int = 0) -> None:
        self.calls.clear()
        self.ops.clear()
        last = self.positions is not None and self.positions and self.pos >= max(self.positions)
        self.pos += 1
        if last and self.stop:
            self.sink.flush()
            raise SystemExit(0)

    # ---- module hooks

    def _name(self, module: Any) -> str:
        name = self.names.get(id(module))
        if name is None:  # an outermost module: name it and everything under it
            root = type(module).__name__
            for path, sub in module.named_modules():
                self.names.setdefault(id(sub), f"{root}.{path}" if path else root)
            name = self.names[id(module)]
        return name

    def pre(self, module: Any, _args: Any) -> None:
        if not self.active:
            return
        name = self._name(module)
        if not self.stack and self.mode is not None:
            self.mode.__enter__()
        self.stack.append(name)

    def post(self, module: Any, _args: Any, output: Any) -> None:
        if not self.active or not self.stack:
            return
        import torch
        from torch.utils._pytree import tree_leaves

        name = self.stack.pop()
        if not self.stack and self.mode is not None:
            self.mode.__exit__(None, None, None)
        call = self.calls.get(name, 0)
        self.calls[name] = call + 1
        tensors = [t for t in tree_leaves(output) if isinstance(t, torch.Tensor)]
        self.record("module", name, call, tensors, type=type(module).__name__)
        for i, t in enumerate(tensors):
            if t.requires_grad:
                t.register_hook(self._grad_hook(name, call, i))

    def _grad_hook(self, name: str, call: int, index: int) -> Any:
        def hook(grad: Any) -> None:
            self.busy = True
            try:
                self.write({"pos": self.pos, "kind": "grad", "module": name, "call": call, "out": index, **fingerprint(grad)})
            finally:
                self.busy = False

        return hook

    def op(self, func: Any, out: Any) -> None:
        import torch
        from torch.utils._pytree import tree_leaves

        module = self.stack[-1]
        key = (module, self.calls.get(module, 0))
        seq = self.ops.get(key, 0)
        self.ops[key] = seq + 1
        tensors = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        self.record("op", module, key[1], tensors, seq=seq, op=func._schema.name)


def _dispatch_mode(recorder: Recorder) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class _OpFingerprints(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if not recorder.busy and recorder.stack:
                recorder.op(func, out)
            return out

    return _OpFingerprints()


def install_from_env(env: Mapping[str, str]) -> Recorder | None:
    """Start recording when ``ACCEL_PARITY_FINGERPRINTS`` names a file (see the module docstring)."""
    path = read(FILE_ENV, env)
    if not path:
        return None
    import torch
    from torch.nn.modules import module as nn_module

    from .. import metrics

    sink = open(path, "w", buffering=1, encoding="utf-8")  # noqa: SIM115 - open for the process's life
    recorder = Recorder(sink, _positions(read(STEPS_ENV, env) or "all"), flag(STOP_ENV, env))
    recorder.mode = _dispatch_mode(recorder)
    nn_module.register_module_forward_pre_hook(recorder.pre)
    nn_module.register_module_forward_hook(recorder.post, always_call=True)
    if (read(BOUNDARY_ENV, env) or "metrics") == "optimizer":
        torch.optim.optimizer.register_optimizer_step_post_hook(lambda *_: recorder.step_done())
    else:
        metrics.add_step_listener(recorder.step_done)
    return recorder
