"""Run PyTorch's own OpInfo / ModuleInfo samples on the CPU and on emulated neuron; compare bitwise.

Shared by ``test_opinfo_conformance.py`` and ``test_moduleinfo_conformance.py`` (and by
``scripts/db_totals.py``, which prints the totals quoted in the notes).

Mechanics:

* Samples are generated once, on the CPU, with a fixed seed; each run gets its own copy
  with the same strides and storage offset (:func:`replicate`), so in-place ops and
  non-contiguous samples behave the same on both devices.
* Which tensors go to neuron: the same samples generated on ``meta`` show where PyTorch
  meant each tensor to live; a tensor that stays on the CPU there (indices, scalars by
  design) stays on the CPU for the neuron run too.
* Random ops: the CPU generator state is copied into the neuron generator before each
  run; a mismatch is only reported if the CPU, run again, reproduces itself.
* "Bitwise" is the project's bitwise comparison (``accel_abstraction.testing.compare``:
  same dtype, shape and bytes; ``-0.0`` differs from ``0.0``) on every tensor of the
  output pytree; plain values must be equal. Ops returning uninitialized memory (``empty`` and kin) are compared
  by dtype, shape and strides only.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import itertools
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils import _pytree as pytree

from accel_abstraction.testing.compare import _compare_tensors

SAMPLES_PER_OP = 3
# Ops whose result is uninitialized memory: only dtype, shape and strides are compared.
UNINITIALIZED = frozenset(
    {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"}
)
MODULE_INPUTS = 8  # module inputs per ModuleInfo and mode, spread evenly over its list
SEED = 1234

# Outcome of one phase (forward or backward) of one op or module.
PASS, FAIL, NOT_COMPARABLE = "pass", "fail", "n/a"


@dataclasses.dataclass
class Outcome:
    """Forward and backward outcomes, with the first failure message of each."""

    forward: str = NOT_COMPARABLE
    backward: str = NOT_COMPARABLE
    forward_msg: str = ""
    backward_msg: str = ""

    def record(self, phase: str, status: str, msg: str = "") -> None:
        """Fold one sample's result into the phase: any failure wins, then any pass."""
        cur = getattr(self, phase)
        if cur == FAIL:
            return
        if status == FAIL:
            setattr(self, phase, FAIL)
            setattr(self, phase + "_msg", msg)
        elif status == PASS:
            setattr(self, phase, PASS)


def replicate(t: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """Copy `t` to `device` keeping size, strides and storage offset; leaves stay leaves."""
    with torch.no_grad():
        if t.layout != torch.strided or t.is_conj() or t.is_neg() or t.numel() == 0:
            out = t.detach().to(device, copy=True)
        else:
            n = t.untyped_storage().nbytes() // t.element_size()
            flat = torch.empty(n, dtype=t.dtype, device=device)
            flat.copy_(t.detach().as_strided((n,), (1,), 0))
            out = flat.as_strided(t.shape, t.stride(), t.storage_offset())
    if t.requires_grad:
        out.requires_grad_(True)
    return out


def _leaves(tree: Any) -> list[Any]:
    return pytree.tree_leaves(tree)


def _placement(cpu_tree: Any, meta_tree: Any | None) -> list[bool]:
    """Per leaf of `cpu_tree`: does it go to neuron? Uses the meta twin where it lines up."""
    leaves = _leaves(cpu_tree)
    meta = _leaves(meta_tree) if meta_tree is not None else None
    if meta is not None and len(meta) == len(leaves):
        out = []
        for c, m in zip(leaves, meta, strict=True):
            if isinstance(c, torch.Tensor):
                out.append(not (isinstance(m, torch.Tensor) and m.device.type == "cpu"))
            else:
                out.append(False)
        return out
    return [isinstance(c, torch.Tensor) for c in leaves]


def move(tree: Any, placement: list[bool], device: Any) -> Any:
    """A copy of `tree`: tensors marked in `placement` go to `device`, the others are CPU copies."""
    leaves, spec = pytree.tree_flatten(tree)
    out = []
    for leaf, go in zip(leaves, placement, strict=True):
        if isinstance(leaf, torch.Tensor):
            out.append(replicate(leaf, device if go else "cpu"))
        else:
            out.append(leaf)
    return pytree.tree_unflatten(out, spec)


def compare(cpu: Any, neuron: Any, values: bool = True) -> str:
    """'' if the two output trees are bitwise equal (or, without `values`, alike in metadata)."""
    lc, sc = pytree.tree_flatten(cpu)
    ln, sn = pytree.tree_flatten(neuron)
    if sc != sn:
        return f"output structure differs: cpu {sc} vs neuron {sn}"
    for i, (a, b) in enumerate(zip(lc, ln, strict=True)):
        if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
            return f"output {i}: cpu {type(a).__name__} vs neuron {type(b).__name__}"
        if not isinstance(a, torch.Tensor):
            if a != b and not (a != a and b != b):  # NaN == NaN
                return f"output {i}: cpu {a!r} vs neuron {b!r}"
            continue
        if b.device.type not in ("neuron", "cpu"):
            return f"output {i} on unexpected device {b.device}"
        if a.layout != b.layout:
            return f"output {i}: layout cpu {a.layout} vs neuron {b.layout}"
        if not values:
            if (a.dtype, a.shape, a.stride()) != (b.dtype, b.shape, b.stride()):
                return f"output {i}: cpu {a.dtype}{list(a.shape)}{a.stride()} vs neuron {b.dtype}{list(b.shape)}{b.stride()}"
            continue
        if a.layout != torch.strided:
            a, b = a.to_dense(), b.cpu().to_dense()
        if a.is_conj() != b.is_conj() or a.is_neg() != b.is_neg():
            return f"output {i}: conj/neg bits cpu {a.is_conj()}/{a.is_neg()} vs neuron {b.is_conj()}/{b.is_neg()}"
        a = a.detach().resolve_conj().resolve_neg()
        b = b.detach().cpu().resolve_conj().resolve_neg()
        why = _compare_tensors(a, b, 0.0, 0.0)
        if why:
            return f"output {i} ({a.dtype}{list(a.shape)}): " + why.format(got="neuron", ref="cpu")
    return ""


def _seeded(fn: Callable[[], Any], to_neuron: bool) -> Any:
    torch.manual_seed(SEED)
    if not to_neuron:
        return fn()
    torch.neuron.set_rng_state(torch.get_rng_state())
    # Some OpInfos seed inside the op (``wrapper_set_seed`` calls ``torch.manual_seed(42)``);
    # seeding then gives the device generator the CPU generator's state for that seed.
    mod = torch.neuron
    original = mod.manual_seed_all
    mod.manual_seed_all = lambda seed: mod.set_rng_state(torch.Generator().manual_seed(int(seed)).get_state())
    try:
        return fn()
    finally:
        mod.manual_seed_all = original


def _diff_outputs(out: Any) -> list[torch.Tensor]:
    return [
        t
        for t in _leaves(out)
        if isinstance(t, torch.Tensor) and t.requires_grad and (t.is_floating_point() or t.is_complex())
    ]


def _grad_inputs(tree: Any) -> list[torch.Tensor]:
    return [t for t in _leaves(tree) if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf]


def _cotangents(outs: list[torch.Tensor]) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(7)
    return [torch.randn(o.shape, dtype=o.dtype, generator=g) for o in outs]


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"


def run_pair(
    call: Callable[[Any], Any],
    cpu_inputs: Callable[[], Any],
    neuron_inputs: Callable[[], Any],
    outcome: Outcome,
    backward: bool,
    extra_grads: Callable[[Any], list[torch.Tensor]] | None = None,
    values: bool = True,
) -> None:
    """Run `call` on fresh CPU and neuron inputs, compare forward and (if asked) backward.

    `extra_grads(inputs)` adds tensors to differentiate against (module parameters).
    """
    ci = cpu_inputs()
    try:
        co = _seeded(lambda: call(ci), False)
    except Exception:
        return  # the CPU itself rejects the sample: not comparable
    ni = neuron_inputs()
    try:
        no = _seeded(lambda: call(ni), True)
    except Exception as e:
        outcome.record("forward", FAIL, "neuron raised, cpu did not: " + _err(e))
        return
    diff = compare(co, no, values)
    if diff:
        ci2 = cpu_inputs()
        try:
            again = _seeded(lambda: call(ci2), False)
        except Exception:
            again = None
        if again is None or compare(co, again, values):
            return  # the CPU does not reproduce itself: not comparable
        outcome.record("forward", FAIL, diff)
        return
    outcome.record("forward", PASS)
    if not backward:
        return
    couts, nouts = _diff_outputs(co), _diff_outputs(no)
    cins = _grad_inputs(ci) + (extra_grads(ci) if extra_grads else [])
    nins = _grad_inputs(ni) + (extra_grads(ni) if extra_grads else [])
    if not couts or not cins:
        return
    if len(couts) != len(nouts) or len(cins) != len(nins):
        outcome.record("backward", FAIL, "different differentiable outputs/inputs on neuron")
        return
    cg = _cotangents(couts)
    ng = [replicate(g, "neuron") if o.device.type == "neuron" else g for g, o in zip(cg, nouts, strict=True)]
    try:
        cgrads = _seeded(lambda: torch.autograd.grad(couts, cins, cg, allow_unused=True), False)
    except Exception:
        return
    try:
        ngrads = _seeded(lambda: torch.autograd.grad(nouts, nins, ng, allow_unused=True), True)
    except Exception as e:
        outcome.record("backward", FAIL, "neuron raised, cpu did not: " + _err(e))
        return
    diff = compare(list(cgrads), list(ngrads))
    outcome.record("backward", FAIL if diff else PASS, diff)


# ------------------------------------------------------------------------------------- databases


def _import_quietly(module: str, name: str) -> list[Any]:
    """``module.name`` from torch.testing._internal, without its import-time global side effect.

    Importing ``common_utils`` calls ``torch.backends.disable_global_flags()``: afterwards any plain
    ``torch.backends.cudnn.x = ...`` in the same process raises. Tests elsewhere in the suite set
    those flags, so the flag is put back as it was.
    """
    frozen = torch.backends.flags_frozen()
    db = getattr(importlib.import_module(module), name)
    if not frozen:  # the flag lives in torch/backends/__init__.py's globals (no public setter)
        torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = True
    return db


def op_db() -> list[Any]:
    """PyTorch's OpInfo database."""
    return _import_quietly("torch.testing._internal.common_methods_invocations", "op_db")


def module_db() -> list[Any]:
    """PyTorch's ModuleInfo database."""
    return _import_quietly("torch.testing._internal.common_modules", "module_db")


# ---------------------------------------------------------------------------------------- OpInfo


def _samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool) -> list[Any]:
    torch.manual_seed(0)
    return list(
        itertools.islice(op.sample_inputs(device, dtype, requires_grad=requires_grad), SAMPLES_PER_OP)
    )


def _as_tree(sample: Any) -> tuple:
    return (sample.input, sample.args, sample.kwargs)


def check_op(op: Any, dtype: torch.dtype) -> Outcome:
    """Forward (and backward, where the OpInfo supports autograd) of `op`'s first samples."""
    outcome = Outcome()
    if dtype not in op.supported_dtypes("cpu"):
        return outcome
    grad = bool(op.supports_autograd) and (dtype.is_floating_point or dtype.is_complex)
    try:
        samples = _samples(op, "cpu", dtype, grad)
    except Exception:
        return outcome
    try:
        metas: list[Any] | None = _samples(op, "meta", dtype, grad)
    except Exception:
        metas = None
    for i, s in enumerate(samples):
        tree = _as_tree(s)
        meta = _as_tree(metas[i]) if metas is not None and i < len(metas) else None
        where = _placement(tree, meta)

        def call(t: Any) -> Any:
            inp, args, kwargs = t
            return op(inp, *args, **kwargs)

        run_pair(
            call,
            lambda tree=tree, where=where: move(tree, where, "cpu"),
            lambda tree=tree, where=where: move(tree, where, "neuron"),
            outcome,
            backward=grad,
            values=op.name not in UNINITIALIZED,
        )
    return outcome


# ------------------------------------------------------------------------------------ ModuleInfo


def check_module(info: Any, dtype: torch.dtype, training: bool) -> Outcome:
    """Forward, backward (input and parameter grads) of `info`'s module inputs."""
    outcome = Outcome()
    try:
        torch.manual_seed(0)
        inputs = list(
            info.module_inputs_func(info, device="cpu", dtype=dtype, requires_grad=True, training=training)
        )
    except Exception:
        return outcome
    inputs = [mi for mi in inputs if mi.forward_input is not None]
    if len(inputs) > MODULE_INPUTS:
        step = len(inputs) / MODULE_INPUTS
        inputs = [inputs[int(i * step)] for i in range(MODULE_INPUTS)]
    for mi in inputs:
        if mi.forward_input is None:
            continue
        cargs, ckwargs = mi.constructor_input.args, mi.constructor_input.kwargs
        try:
            torch.manual_seed(SEED)
            base = info.module_cls(*cargs, **ckwargs).to(dtype)
        except Exception:
            continue
        base.train(training)
        fwd = (mi.forward_input.args, mi.forward_input.kwargs)
        where = [isinstance(x, torch.Tensor) for x in _leaves(fwd)]

        def make(device: str, base: Any = base, fwd: Any = fwd, where: list = where) -> Any:
            m = copy.deepcopy(base)
            if device != "cpu":
                m = m.to(device)
            return (m, move(fwd, where, device))

        def call(t: Any) -> Any:
            m, (args, kwargs) = t
            return m(*args, **kwargs)

        def params(t: Any) -> list[torch.Tensor]:
            return [p for p in t[0].parameters() if p.requires_grad]

        run_pair(
            call,
            lambda make=make: make("cpu"),
            lambda make=make: make("neuron"),
            outcome,
            backward=True,
            extra_grads=params,
        )
    return outcome


def op_ids(ops: Iterable[Any]) -> list[str]:
    """Test ids for OpInfos: ``name`` or ``name.variant``."""
    return [f"{o.name}.{o.variant_test_name}" if o.variant_test_name else o.name for o in ops]


def unfreeze_backend_flags() -> None:
    """Undo what importing ``torch.testing._internal`` does to the whole process.

    Its ``common_utils`` calls ``torch.backends.disable_global_flags()`` on import (at
    collection, through op_db/module_db), after which any other test that sets
    ``torch.backends.cudnn.*`` directly fails with "not allowed to set torch.backends.cudnn
    flags after disable_global_flags".
    """
    # torch.backends is a module wrapper: the flag lives in the real module's globals
    torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = True
