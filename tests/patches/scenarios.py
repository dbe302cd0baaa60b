"""What each patched torch behaviour looks like, observed in a fresh interpreter.

Usage::

    python scenarios.py DEVICE NAME [NAME ...]        # stock torch
    python -m accel_abstraction.patching.run --overlay DIR scenarios.py DEVICE NAME ...

``DEVICE`` is ``neuron`` (the emulated device is installed first and is the current
accelerator) or ``cpu`` (nothing installed: a CPU-only process). ``NAME`` is a scenario
below or ``all``. The last stdout line is ``{"name": {observations}, ...}`` as JSON. An
error a scenario expects is recorded as an observation; any other error fails the run.

Distributed scenarios use a single-process gloo group on 127.0.0.1 only.

Why one script of ~540 lines: it runs as a script in a fresh interpreter, under the overlay or
not, so that what it imports is exactly what the overlay serves; each scenario is one
registered function of a few dozen lines, looked up by name.
"""

from __future__ import annotations

import json
import os
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch

from accel_abstraction.testing.ports import free_port

SCENARIOS: dict[str, Callable[[str], dict[str, Any]]] = {}


def scenario(func: Callable[[str], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    SCENARIOS[func.__name__] = func
    return func


def _error(exc: BaseException) -> dict[str, str]:
    return {"error": type(exc).__name__, "message": str(exc).splitlines()[0][:300]}


def _warnings(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message).splitlines()[0][:200] for w in record]


def _init_single_process_group(backend: str = "gloo") -> None:
    import torch.distributed as dist

    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)


def _tensor(device: str, *shape: int, requires_grad: bool = False) -> torch.Tensor:
    return torch.randn(*shape).to(device).requires_grad_(requires_grad)


def _torchs_own(installed: types.ModuleType) -> types.ModuleType:
    """A fresh copy of torch module `installed` from its file: torch's own code (stock or patched),
    whatever a backend changed in the imported module at run time."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"_torchs_{installed.__name__.replace('.', '_')}", installed.__file__
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------- 0001, 0003


@scenario
def grad_scaler(device: str) -> dict[str, Any]:
    """`GradScaler()` with defaults: enabled? on which device? does it scale?"""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        scaler = torch.amp.GradScaler()
    loss = torch.tensor(2.0).to(device)
    return {
        "enabled": scaler.is_enabled(),
        "device": scaler._device,
        "warnings": _warnings(record),
        "scaled_loss": float(scaler.scale(loss).cpu()),
    }


@scenario
def sharded_grad_scaler(device: str) -> dict[str, Any]:
    """FSDP's `ShardedGradScaler()` with defaults."""
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        scaler = ShardedGradScaler()
    return {"enabled": scaler.is_enabled(), "device": scaler._device, "warnings": _warnings(record)}


# ----------------------------------------------------------------------------- 0002


class _WithoutCudaFlag(types.ModuleType):
    """A device module without CUDA's private ``_initialized`` flag, as torch_neuronx's is.

    The emulator's ``torch.neuron`` mirrors that flag, which the real backend's module
    does not have (it offers ``is_initialized()``); torch code that reads the flag works
    on the emulator only. Everything else, the ``_is_in_bad_fork`` hook that
    ``torch.manual_seed`` needs included, is forwarded.
    """

    def __init__(self, module: types.ModuleType) -> None:
        super().__init__(module.__name__)
        self._wrapped = module

    def __getattr__(self, name: str) -> Any:
        if name == "_initialized":
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return getattr(self._wrapped, name)


@scenario
def checkpoint_dropout(device: str) -> dict[str, Any]:
    """Gradients of a checkpointed Linear+Dropout equal the plain ones under the same seeds?"""
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    linear = torch.nn.Linear(32, 32).to(device)
    dropout = torch.nn.Dropout(0.5)
    x = _tensor(device, 16, 32, requires_grad=True)

    def block(inp: torch.Tensor) -> torch.Tensor:
        return dropout(linear(inp)) * 3.0

    def gradients(use_reentrant: bool | None) -> list[float]:
        torch.manual_seed(1)
        linear.zero_grad()
        x.grad = None
        out = block(x) if use_reentrant is None else checkpoint(block, x, use_reentrant=use_reentrant)
        out.square().sum().backward()
        return linear.weight.grad.cpu().flatten().tolist() + x.grad.cpu().flatten().tolist()

    def compare() -> dict[str, bool]:
        plain = gradients(None)
        return {"reentrant": gradients(True) == plain, "non_reentrant": gradients(False) == plain}

    result: dict[str, Any] = {"gradient_sum": sum(gradients(None)), "module_as_installed": compare()}
    if device != "cpu":
        installed = getattr(torch, device)
        setattr(torch, device, _WithoutCudaFlag(installed))
        try:
            result["module_without_cuda_flag"] = compare()
        finally:
            setattr(torch, device, installed)
    return result


# ----------------------------------------------------------------------------- 0004


@scenario
def save_on_cpu_pinned(device: str) -> dict[str, Any]:
    """Which device module does `save_on_cpu(pin_memory=True)` ask whether it can pin?"""
    consulted: list[str] = []
    modules = {"cuda": torch.cuda}
    accelerator = torch.accelerator.current_accelerator()
    if accelerator is not None:
        modules[accelerator.type] = torch.get_device_module(accelerator)
    originals = {name: module.is_available for name, module in modules.items()}

    def spy(name: str) -> Callable[[], bool]:
        def is_available() -> bool:
            consulted.append(name)
            return originals[name]()

        return is_available

    linear = torch.nn.Linear(8, 8).to(device)
    x = _tensor(device, 4, 8, requires_grad=True)
    for name, module in modules.items():
        module.is_available = spy(name)
    try:
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            out = linear(x).relu().sum()
        out.backward()
        outcome: Any = {"gradient_sum": float(x.grad.sum().cpu())}
    except (RuntimeError, NotImplementedError) as exc:
        outcome = _error(exc)
    finally:
        for name, module in modules.items():
            module.is_available = originals[name]
    return {"consulted": sorted(set(consulted)), "outcome": outcome}


# ----------------------------------------------------------------------------- 0005


@scenario
def dynamo_rng(device: str) -> dict[str, Any]:
    """A draw inside dynamo's RNG-preserving helpers is undone for the device's generator?"""
    from torch._dynamo.convert_frame import preserve_global_state
    from torch._dynamo.utils import checkpoint_params, preserve_rng_state

    if device == "cpu":
        get_state = torch.get_rng_state
        torch.manual_seed(0)
    else:
        module = torch.get_device_module(device)
        get_state = module.get_rng_state
        module.manual_seed(0)

    def draw() -> None:
        torch.rand(16, device=device)

    before = get_state().clone()
    with preserve_rng_state():
        draw()
    after_preserve = torch.equal(before, get_state())

    gm = torch.fx.symbolic_trace(torch.nn.Linear(2, 2))
    before = get_state().clone()
    restore = checkpoint_params(gm)
    draw()
    restore()
    after_checkpoint_params = torch.equal(before, get_state())

    before = get_state().clone()
    preserve_global_state(draw)()
    after_global_state = torch.equal(before, get_state())
    return {
        "preserve_rng_state": after_preserve,
        "checkpoint_params": after_checkpoint_params,
        "preserve_global_state": after_global_state,
    }


# ----------------------------------------------------------------------------- 0006


@scenario
def ddp_bf16_hook(device: str) -> dict[str, Any]:
    """Does DDP accept `bf16_compress_hook` for a module on this device, and train through it?"""
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import bf16_compress_hook

    if device == "cpu":
        backend = "gloo"
    else:
        from accel_neuron.emulated_dist import register_emulated_process_group

        register_emulated_process_group()
        backend = "neuron"
    _init_single_process_group(backend)
    try:
        torch.manual_seed(0)
        module = torch.nn.Linear(4, 4).to(device)
        ddp = torch.nn.parallel.DistributedDataParallel(module)
        result: dict[str, Any] = {"ddp_device_type": ddp.device_type}
        try:
            ddp.register_comm_hook(None, bf16_compress_hook)
        except TypeError as exc:
            result["hook_registered"] = _error(exc)
            return result
        result["hook_registered"] = True
        ddp(_tensor(device, 2, 4)).sum().backward()
        grad = module.weight.grad.cpu()
        result["gradient_went_through_bf16"] = torch.equal(grad, grad.bfloat16().float())
        return result
    finally:
        dist.destroy_process_group()


# ----------------------------------------------------------------------------- 0007


@scenario
def register_backend_default_devices(device: str) -> dict[str, Any]:
    """Devices assumed for a backend registered (or named) without `devices`."""
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import BackendConfig

    def create(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("never called")

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        dist.Backend.register_backend("patchtestbackend", create)
        registered_map = BackendConfig(dist.Backend("patchtestbackend")).device_backend_map
        unknown_map = BackendConfig("patchtestunknown").device_backend_map  # type: ignore[arg-type]
    return {
        "capability": dist.Backend.backend_capability["patchtestbackend"],
        "registered_config_devices": sorted(registered_map),
        "unknown_config_devices": sorted(unknown_map),
        "warnings": _warnings(record),
    }


# ----------------------------------------------------------------------------- 0008


@scenario
def device_mesh_default_group(device: str) -> dict[str, Any]:
    """Does a 1-D mesh over the whole (gloo) world reuse the default group?"""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    _init_single_process_group()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "set the device before DeviceMesh": irrelevant here
            mesh = init_device_mesh(device, (1,))
        group = mesh.get_group()
        return {
            "reuses_default_group": group is dist.group.WORLD,
            "mesh_group_backend": dist.get_backend(group),
        }
    finally:
        dist.destroy_process_group()


# ----------------------------------------------------------------------------- 0009


@scenario
def memory_snapshot(device: str) -> dict[str, Any]:
    """What `torch.accelerator.memory._snapshot()` does."""
    try:
        snapshot = torch.accelerator.memory._snapshot()
    except (AttributeError, RuntimeError) as exc:
        return _error(exc)
    return {"keys": sorted(snapshot)}


# ----------------------------------------------------------------------------- 0010


@scenario
def profiler_memory_timeline(device: str) -> dict[str, Any]:
    """The peak memory written into the memory-timeline plot for this device."""
    import matplotlib

    matplotlib.use("Agg")
    import tempfile
    import types

    from matplotlib.axes import Axes
    from torch.profiler._memory_profiler import _CATEGORY_TO_INDEX, MemoryProfileTimeline

    keep = torch.empty(64 * 1024 * 1024, dtype=torch.float32, device=device)  # 256 MiB
    width = max(_CATEGORY_TO_INDEX.values()) + 2
    nbytes = keep.nbytes
    timeline = types.SimpleNamespace(
        _coalesce_timeline=lambda device_str: ([0, 1000], [[0] * width, [nbytes] + [0] * (width - 1)])
    )
    titles: list[str] = []
    set_title = Axes.set_title

    def record_title(self: Axes, label: str, *args: Any, **kwargs: Any) -> Any:
        titles.append(label)
        return set_title(self, label, *args, **kwargs)

    Axes.set_title = record_title  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            device_str = "cpu" if device == "cpu" else f"{device}:0"
            MemoryProfileTimeline.export_memory_timeline_html(
                timeline, os.path.join(tmp, "t.html"), device_str
            )
    finally:
        Axes.set_title = set_title  # type: ignore[method-assign]
    del keep
    return {"title": titles[-1].replace("\n", " ").strip() if titles else None}


# ----------------------------------------------------------------------------- 0011


@scenario
def module_to_keeps_tied_and_lazy(device: str) -> dict[str, Any]:
    """After `.to(device)`: tied weights tied? lazy parameters lazy? training as on the CPU?"""
    from tied_models import TiedLM, is_tied, train_lazy, train_tied_lm

    model = TiedLM().to(device)
    tied_after_to = is_tied(model)
    tied_after_cpu = is_tied(model.cpu())
    shared = torch.nn.Module()
    shared.register_buffer("table", torch.ones(3))
    other = torch.nn.Module()
    other.register_buffer("table", shared.table)
    torch.nn.Sequential(shared, other).to(device)
    trained, reference = train_tied_lm(device), train_tied_lm("cpu")
    try:
        lazy = train_lazy(device)
        lazy_outcome: Any = {
            "lazy_after_to": bool(lazy["lazy_after_to"]),
            "same_as_cpu": _same(lazy, train_lazy("cpu")),
        }
    except AssertionError as exc:  # stock: "The in_features inferred from input: 12 is not equal to ... 0"
        lazy_outcome = _error(exc)
    return {
        # accel's mitigation (the neuron plugin's Module._apply wrapper) is not installed here
        "module_apply_is_torchs": torch.nn.Module._apply.__module__ == "torch.nn.modules.module",
        "tied_after_to": tied_after_to,
        "tied_after_cpu": tied_after_cpu,
        "buffer_shared": shared.table is other.table,
        "trained_tied": bool(trained["tied"]),
        "parameters": int(trained["parameters"]),
        "training_same_as_cpu": _same(trained, reference),
        "lazy": lazy_outcome,
    }


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# ----------------------------------------------------------------------------- 0012


@scenario
def linear_cross_entropy_accumulation(device: str) -> dict[str, Any]:
    """Accumulation dtype `auto` resolves to for 16-bit inputs; a bf16 head vs the CPU's fp32-acc result."""
    import torch.nn.functional as F
    from torch.nn.modules import linear_cross_entropy_options as installed

    # The emulator gives neuron the CPU's entries (a workaround real backends do not have).
    # F.linear_cross_entropy only calls options._adjust(), so options from torch's own copy
    # decide exactly as torch's code does.
    torchs = _torchs_own(installed)
    LinearCrossEntropyOptions = torchs.LinearCrossEntropyOptions

    options = LinearCrossEntropyOptions()
    resolved = {
        str(dtype): str(options._adjust(64, 16, 256, dtype, torch.device(device)).acc_dtype)
        for dtype in (torch.bfloat16, torch.float16)
    }
    x = torch.randn(64, 16).bfloat16()
    w = torch.randn(256, 16).bfloat16()
    y = torch.randint(0, 256, (64,))

    def run(dev: str, opts: Any) -> list[torch.Tensor]:
        xd, wd = (t.to(dev).detach().requires_grad_() for t in (x, w))
        loss = F.linear_cross_entropy(xd, wd, y.to(dev), options=opts)
        loss.backward()
        return [t.detach().cpu() for t in (loss, xd.grad, wd.grad)]

    # The CPU with what "auto" means on a device without per-device defaults (torch's own choice for
    # a device type it lists nowhere, "meta"; it changed in 2.14), accumulating in fp32.
    fallback = options._adjust(64, 16, 256, torch.bfloat16, torch.device("meta"))
    reference = run(
        "cpu",
        LinearCrossEntropyOptions(
            acc_policy=fallback.acc_policy,
            chunking_method=fallback.chunking_method,
            batch_chunk_size=fallback.batch_chunk_size,
            acc_dtype=torch.float32,
        ),
    )
    on_device = run(device, options)
    return {
        "resolved": resolved,
        "same_as_cpu_fp32_accumulation": all(
            torch.equal(a, b) for a, b in zip(on_device, reference, strict=True)
        ),
        "loss": float(on_device[0]),
    }


# ----------------------------------------------------------------------------- 0015


@scenario
def flex_attention_device(device: str) -> dict[str, Any]:
    """Does flex attention accept the device's tensors, and compute what the CPU computes?"""
    from torch.nn.attention import flex_attention as installed

    # The emulator lets neuron through the device check on a stock torch (a workaround real
    # backends lack): observe torch's own copy.
    torchs = _torchs_own(installed)

    def causal(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return q_idx >= kv_idx

    def relative_bias(score: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return score + (q_idx - kv_idx) * 0.01

    q, k, v = (torch.randn(1, 2, 128, 16) for _ in range(3))
    cpu_mask = torchs.create_block_mask(causal, 1, 1, 128, 128, device="cpu")
    reference = torchs.flex_attention(q, k, v, block_mask=cpu_mask, score_mod=relative_bias)
    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "flex_attention called without torch.compile()"
        try:
            mask = torchs.create_block_mask(causal, 1, 1, 128, 128, device=device)
            qd, kd, vd = (t.to(device).requires_grad_(device != "cpu") for t in (q, k, v))
            got = torchs.flex_attention(qd, kd, vd, block_mask=mask, score_mod=relative_bias)
        except (ValueError, RuntimeError, NotImplementedError) as exc:
            return {"outcome": _error(exc)}
    out["same_as_cpu"] = torch.equal(got.detach().cpu(), reference)
    if device != "cpu":  # backward against the math it stands for (the CPU's flex has no backward)
        got.sum().backward()
        qc, kc, vc = (t.clone().requires_grad_() for t in (q, k, v))
        pos = torch.arange(128)
        scores = qc @ kc.transpose(-2, -1) * 16**-0.5 + (pos[:, None] - pos[None, :]) * 0.01
        scores = scores.masked_fill(pos[:, None] < pos[None, :], float("-inf"))
        (torch.softmax(scores, -1) @ vc).sum().backward()
        out["gradients_match_math"] = all(
            torch.allclose(a.grad.cpu(), b.grad, atol=1e-5)
            for a, b in zip((qd, kd, vd), (qc, kc, vc), strict=True)
        )
    return {"outcome": out}


# ----------------------------------------------------------------------------- 0016


@scenario
def fused_optimizer_metadata(device: str) -> dict[str, Any]:
    """Whether PyTorch's optimizer test metadata lists the device as fused-capable; fused Adam vs the CPU's."""
    from torch.testing._internal.common_optimizers import optim_db

    listed = {
        info.optim_cls.__name__: device in info.supports_fused_on
        for info in optim_db
        if info.optim_cls.__name__ in ("Adam", "AdamW", "SGD")
    }
    weights = torch.randn(8, 4)
    grads = [torch.randn(8, 4) for _ in range(3)]

    def train(dev: str) -> torch.Tensor:
        p = torch.nn.Parameter(weights.clone().to(dev))
        opt = torch.optim.Adam([p], lr=0.1, fused=True)
        for g in grads:
            p.grad = g.to(dev)
            opt.step()
        return p.detach().cpu()

    return {"listed": listed, "fused_adam_same_as_cpu": torch.equal(train(device), train("cpu"))}


@scenario
def group_norm_memory_format_skip(device: str) -> dict[str, Any]:
    """Whether module_db skips GroupNorm's test_memory_format on the device; a channels_last input's
    gradient layout there and on the CPU (the device split the skip stands for)."""
    from torch.testing._internal.common_modules import module_db

    [info] = [m for m in module_db if m.module_cls is torch.nn.GroupNorm]
    skipped = any(
        d.is_active("TestModule", "test_memory_format", device, torch.float32, {})
        for d in info.decorators
        if any("skip" in getattr(f, "__qualname__", "") for f in d.decorators)
    )

    def grad_is_channels_last(dev: str) -> bool:
        x = torch.randn(2, 6, 4, 4).to(dev).to(memory_format=torch.channels_last).requires_grad_()
        y = torch.nn.GroupNorm(3, 6).to(dev)(x)
        (grad,) = torch.autograd.grad(y, x, torch.rand_like(y))
        return grad.is_contiguous(memory_format=torch.channels_last)

    return {"skipped": skipped, "grad_channels_last": grad_is_channels_last(device), "cpu": grad_is_channels_last("cpu")}


# ----------------------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    device, *names = argv
    if device == "neuron":
        from accel_neuron import emulator

        emulator.install()
    elif device != "cpu":
        raise SystemExit(f"unknown device {device!r}: use neuron or cpu")
    if names == ["all"]:
        names = list(SCENARIOS)
    results = {}
    for name in names:
        torch.manual_seed(0)  # each scenario sees the same random stream, alone or after others
        results[name] = SCENARIOS[name](device)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
