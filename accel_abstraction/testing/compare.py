"""Run a function under several backends and check that the tensors it returns agree.

::

    from accel_abstraction.testing import assert_backends_match

    def forward():
        torch.manual_seed(0)
        model = Net().to(accel.device())
        return model(torch.randn(4, 8).to(accel.device()))

    assert_backends_match(forward, backends=["cpu", "neuron"])            # bitwise
    assert_backends_match(forward, backends=["cpu", "neuron"], rtol=1e-2, atol=1e-3)

``fn`` returns a tensor or any nesting of tuples, lists and dicts of tensors and plain values;
results are moved to the CPU and compared with the first backend's. With ``rtol = atol = 0``
tensors must be equal bit for bit (same dtype, shape and bytes: ``-0.0`` differs from
``0.0``, identical NaNs agree); otherwise ``|x - ref| <= atol + rtol * |ref|``.
An :class:`AssertionError` names the backend that diverged, where (``result[1]['logits']``
and the element index), both values and the largest absolute difference.

Backends that cannot share a process (a real PrivateUse1 backend and an emulation of
one) run in subprocesses: ``subprocess=True`` runs every backend in its own process,
``"auto"`` only those that need it. ``fn`` must then be importable: a ``"module:function"``
string, or a module-level function. Each child selects its backend through
``ACCEL_BACKEND`` (plus the emulation variable where the hardware is absent: the rule of
:mod:`accel_abstraction.emulation`, the same in this process, in pytest and in ``accel parity``) and hands its result back through ``torch.save`` to a temporary file.
"""

from __future__ import annotations

import importlib
import os
import subprocess as _subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import torch

from .._labels import unique_labels
from ..environment import read
from .timeouts import scaled

__all__ = ["BackendResults", "assert_backends_match"]

BackendResults = dict[str, Any]
"""What :func:`assert_backends_match` returns: each run's result (on the CPU), by backend name
(``"cpu#2"`` for the second run of a backend listed twice)."""

_TIMEOUT = 600.0  # seconds a subprocess run may take on an idle machine (scaled by load)


def _to_cpu(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_to_cpu(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_cpu(v) for v in obj)
    if isinstance(obj, Mapping):
        return {k: _to_cpu(v) for k, v in obj.items()}
    return obj


# --------------------------------------------------------------------------- comparison


def _fmt_index(flat: int, shape: torch.Size) -> str:
    if len(shape) == 0:
        return "()"
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim)
        flat //= dim
    return "(" + ", ".join(str(i) for i in reversed(idx)) + ("," if len(shape) == 1 else "") + ")"


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes as integers of the same width, one per element (for bitwise comparison)."""
    t = t.contiguous()
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    width = t.element_size()
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[width]
    return t.view(as_int)


def _compare_tensors(ref: torch.Tensor, got: torch.Tensor, rtol: float, atol: float) -> str | None:
    if ref.dtype != got.dtype:
        return f"dtype {got.dtype} != {ref.dtype}"
    if ref.shape != got.shape:
        return f"shape {tuple(got.shape)} != {tuple(ref.shape)}"
    if ref.numel() == 0:
        return None
    bitwise = rtol == 0 and atol == 0
    if bitwise:
        rb, gb = _bits(ref), _bits(got)
        bad = (rb != gb).reshape(ref.shape + rb.shape[ref.dim() :]).reshape(ref.numel(), -1).any(dim=1)
    elif ref.is_floating_point() or ref.is_complex():
        bad = ~torch.isclose(got, ref, rtol=rtol, atol=atol, equal_nan=True).reshape(-1)
    else:
        bad = (got.to(torch.float64) - ref.to(torch.float64)).abs().reshape(-1) > atol + rtol * ref.to(
            torch.float64
        ).abs().reshape(-1)
    n_bad = int(bad.sum())
    if n_bad == 0:
        return None
    first = int(bad.nonzero()[0, 0])
    r_flat, g_flat = ref.reshape(-1), got.reshape(-1)
    max_diff = ""
    if ref.dtype != torch.bool:
        wide = torch.complex128 if ref.is_complex() else torch.float64
        diff = (g_flat[bad].to(wide) - r_flat[bad].to(wide)).abs().nan_to_num(nan=float("inf"))
        max_diff = f"; max abs diff {float(diff.max()):.6g}"
    how = "bitwise" if bitwise else f"rtol={rtol:g}, atol={atol:g}"
    return (
        f"{n_bad} of {ref.numel()} elements differ ({how}); first at index {_fmt_index(first, ref.shape)}: "
        f"{{got}}={g_flat[first].item()!r} {{ref}}={r_flat[first].item()!r}{max_diff}"
    )


def _keys(mapping: Mapping[Any, Any]) -> str:
    return "[" + ", ".join(sorted(map(repr, mapping))) + "]"


def _compare(ref: Any, got: Any, path: str, rtol: float, atol: float) -> tuple[str, str] | None:
    """The first difference as ``(path, description)``, or None."""
    if isinstance(ref, torch.Tensor) or isinstance(got, torch.Tensor):
        if not (isinstance(ref, torch.Tensor) and isinstance(got, torch.Tensor)):
            return path, f"type {type(got).__name__} != {type(ref).__name__}"
        why = _compare_tensors(ref, got, rtol, atol)
        return None if why is None else (path, why)
    if isinstance(ref, Mapping):
        if not isinstance(got, Mapping) or set(got) != set(ref):
            keys = _keys(got) if isinstance(got, Mapping) else type(got).__name__
            return path, f"keys {keys} != {_keys(ref)}"
        for key in ref:
            found = _compare(ref[key], got[key], f"{path}[{key!r}]", rtol, atol)
            if found:
                return found
        return None
    if isinstance(ref, (list, tuple)):
        if type(got) is not type(ref) or len(got) != len(ref):
            return (
                path,
                f"{type(got).__name__} of length {len(got)} != {type(ref).__name__} of length {len(ref)}",
            )
        for i, (r, g) in enumerate(zip(ref, got, strict=True)):
            found = _compare(r, g, f"{path}[{i}]", rtol, atol)
            if found:
                return found
        return None
    if isinstance(ref, float) and isinstance(got, float) and (rtol or atol):
        if abs(got - ref) <= atol + rtol * abs(ref):
            return None
    elif ref == got or (ref != ref and got != got):  # NaN == NaN here
        return None
    return path, f"{{got}}={got!r} {{ref}}={ref!r}"


# --------------------------------------------------------------------------- running


def _resolve(fn: Callable[[], Any] | str) -> tuple[Callable[[], Any], str | None]:
    """The callable and its ``module:function`` name (None when it cannot be imported by name)."""
    if isinstance(fn, str):
        module, _, attr = fn.partition(":")
        if not module or not attr:
            raise ValueError(f"fn {fn!r}: expected 'module:function'")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj, fn
    fn_module: str | None = getattr(fn, "__module__", None)
    qualname: str = getattr(fn, "__qualname__", "")
    if not fn_module or fn_module == "__main__" or "<" in qualname:
        return fn, None
    return fn, f"{fn_module}:{qualname}"


def _needs_subprocess(name: str) -> bool:
    """For ``subprocess="auto"``: can backend ``name`` not run in this process as it is?"""
    from accel_abstraction.emulation import backend_env
    from accel_abstraction.runtime import _selection

    if _selection is not None and _selection.backend.name == name:
        return False
    changes, why_not = backend_env(name)
    if why_not or set(changes) != {"ACCEL_BACKEND"}:
        return True  # it runs only with another environment (an emulation) or not at all here
    from accel_abstraction.plugins import get_host
    from accel_abstraction.sections import CORE
    from accel_abstraction.selection import build_backend

    entry = get_host().registry.get(name)
    device_type = build_backend(entry, CORE.load(backend=name)).device_type
    try:
        torch.device(device_type)  # a device type torch knows here: built in, or installed in this process
    except RuntimeError:
        return True
    return False


def _run_in_process(name: str, fn: Callable[[], Any]) -> Any:
    import accel_abstraction as accel
    from accel_abstraction.emulation import emulated_if_needed
    from accel_abstraction.errors import BackendUnavailableError
    from accel_abstraction.runtime import selection

    with emulated_if_needed(name) as refusal:  # the emulation rule, as for pytest and accel parity
        if refusal is not None:
            raise refusal
        with accel.using(name):
            sel = selection()
            if sel.fell_back_from is not None:  # a configured fallback must not stand in for the backend
                raise BackendUnavailableError(name, sel.fallback_reason)
            return _to_cpu(fn())


def _run_in_subprocess(name: str, target: str, timeout: float) -> Any:
    from accel_abstraction.emulation import backend_env
    from accel_abstraction.errors import AccelError

    changes, why_not = backend_env(name)
    if why_not:
        raise AccelError(why_not)  # emulation.unavailable_message: the same words as pytest's skip
    with tempfile.TemporaryDirectory(prefix="accel-match-") as tmp:
        out = Path(tmp) / "result.pt"
        env = {**os.environ, **changes}
        paths = [p for p in sys.path if p]
        env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        cmd = [sys.executable, "-m", __name__, target, str(out)]
        proc = _subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=os.getcwd())
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise AccelError(
                f"running {target} on backend {name!r} in a subprocess failed (exit {proc.returncode}):\n{tail}"
            )
        return torch.load(out, weights_only=True)


def assert_backends_match(
    fn: Callable[[], Any] | str,
    backends: Sequence[str] | None = None,
    rtol: float = 0.0,
    atol: float = 0.0,
    subprocess: bool | Literal["auto"] = False,
    timeout: float | None = None,
) -> BackendResults:
    """Run ``fn()`` under each backend and assert that the results agree with the first backend's.

    ``backends``: names, the first being the reference (default: ``$ACCEL_TEST_BACKENDS`` when it
    names two or more, else every registered backend that runs here, emulated or not:
    :func:`~accel_abstraction.emulation.runnable_backends`). ``subprocess``: ``False``
    (all in this process, selected with ``accel.using``), ``True`` (each in its own process) or
    ``"auto"`` (a subprocess only for a backend that cannot run in this one). A backend listed
    twice runs twice (a determinism check). Returns the results by backend name (``"cpu#2"``
    for a repeat), on the CPU. Raises :class:`AssertionError` on the first divergence.
    ``timeout``: seconds each subprocess run may take (default 600, stretched by the machine's load
    per CPU: :func:`accel_abstraction.testing.timeouts.scaled`).
    """
    if rtol < 0 or atol < 0:
        raise ValueError(f"tolerances must be >= 0 (rtol={rtol}, atol={atol})")
    if subprocess not in (True, False, "auto"):
        raise ValueError(f"subprocess must be True, False or 'auto', not {subprocess!r}")
    names = list(backends) if backends is not None else _default_backends()
    if not names:
        raise ValueError("assert_backends_match needs at least one backend")
    func, target = _resolve(fn)
    results: BackendResults = {}
    for label, name in zip(unique_labels(names), names, strict=True):
        isolated = subprocess is True or (subprocess == "auto" and _needs_subprocess(name))
        if isolated:
            if target is None:
                raise ValueError(
                    f"backend {name!r} runs in a subprocess, which needs an importable function: pass "
                    f"'module:function' (got {fn!r}, which is local or defined in __main__)"
                )
            limit = timeout if timeout is not None else scaled(_TIMEOUT)
            results[label] = _run_in_subprocess(name, target, limit)
        else:
            results[label] = _run_in_process(name, func)
    labels = list(results)
    ref_name = labels[0]
    for name in labels[1:]:
        found = _compare(results[ref_name], results[name], "result", rtol, atol)
        if found:
            path, why = found
            why = why.replace("{got}", name).replace("{ref}", ref_name)
            raise AssertionError(f"backend {name!r} diverged from {ref_name!r} at {path}: {why}")
    return results


def _default_backends() -> list[str]:
    env = [n.strip() for n in (read("ACCEL_TEST_BACKENDS") or "").split(",") if n.strip()]
    if len(env) >= 2:
        return env
    from accel_abstraction.emulation import runnable_backends

    return runnable_backends()


def _child_main(argv: Sequence[str]) -> int:
    """``python -m accel_abstraction.testing.compare module:function OUT``: run on the configured backend."""
    target, out = argv
    import accel_abstraction as accel

    accel.backend()  # select from ACCEL_BACKEND before importing the target
    func, _ = _resolve(target)
    torch.save(_to_cpu(func()), out)
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
