"""Ops that run, forward and backward, as the CPU's own autograd graph on neuron tensors.

Some composite ops decompose by device inside ATen: ``aten::lstm`` and
``aten::gru`` call the fused cells ``_thnn_fused_lstm_cell``/``_thnn_fused_gru_cell``
(only CUDA implements them) on any non-CPU device, batch the input projection
of a layer into one ``addmm`` only for CPU inputs, and use oneDNN's RNN only
for CPU tensors. Their neuron kernels ("islands") run the op on zero-copy CPU
views of the neuron tensors, with autograd recording the CPU graph, and hand
back neuron tensors over the same memory; backward runs that CPU graph with
the incoming gradients. Results, forward and backward, are the CPU's bit for
bit. Under ``create_graph=True`` an island's backward is itself an island
(:class:`_IslandGrad`): the CPU's first-order gradients, recorded on the CPU,
whose backward gives the CPU's second-order ones (double backward, as
gradgradcheck needs; no third order). Its CPU graph lives in the node's saved tensors, so it is freed when the
engine frees them: after the first backward, or kept by ``retain_graph=True``
(a second backward, per output as ``test_modules`` does, works as on the CPU).
Under saved-tensor hooks (``save_on_cpu``, checkpointing) the CPU graph is kept
on the node instead and freed by the first backward.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from . import devices, fallback, rng, storage
from .op_info import info_for

_Tensor = torch.Tensor

# Overloads that become islands (recurrent layers and cells).
RNN_OPS = (
    "lstm.input",
    "lstm.data",
    "gru.input",
    "gru.data",
    "rnn_tanh.input",
    "rnn_tanh.data",
    "rnn_relu.input",
    "rnn_relu.data",
    "lstm_cell",
    "gru_cell",
    "rnn_tanh_cell",
    "rnn_relu_cell",
)
# Arguments that are CPU tensors by design on every device.
_CPU_BY_DESIGN = frozenset({"batch_sizes"})


def _is_neuron(x: Any) -> bool:
    return isinstance(x, _Tensor) and x.device.type == "neuron"


class _Call:
    """One call of `op`: the argument tree with its tensors taken out, to rebuild on the CPU."""

    def __init__(self, op: Any, args: tuple, kwargs: dict) -> None:
        self.op = op
        leaves, self.spec = pytree.tree_flatten((args, kwargs))
        self.is_tensor = [isinstance(x, _Tensor) for x in leaves]
        self.others = [None if t else x for x, t in zip(leaves, self.is_tensor, strict=True)]
        self.tensors = [x for x in leaves if isinstance(x, _Tensor)]
        first = next((t for t in self.tensors if _is_neuron(t)), None)
        self.index = first.get_device() if first is not None else devices.current()  # results go here
        # Dropout between layers draws random numbers: from the device generator, as on a device.
        names = info_for(op).arg_names
        named = dict(zip(names, args, strict=False))  # trailing defaults may be omitted
        named.update(kwargs)
        self.random = bool(named.get("dropout", 0)) and bool(named.get("train", False))
        self._check_devices(args)

    def _check_devices(self, args: tuple) -> None:
        if not any(_is_neuron(t) for t in self.tensors):
            return
        info = info_for(self.op)
        for i, a in enumerate(args):
            if i < len(info.arg_names) and info.arg_names[i] in _CPU_BY_DESIGN:
                continue
            for x in pytree.tree_leaves(a):
                if not isinstance(x, _Tensor):
                    continue
                if (x.device.type == "cpu" and x.dim() != 0) or (
                    _is_neuron(x) and x.get_device() != self.index
                ):
                    if not self.random:  # the op's own checks speak first, as on CUDA
                        fallback.own_checks_first(self.op, info.name, lambda: self.run_cpu([_cpu(t, False) for t in self.tensors]))
                    raise fallback.device_mismatch(info, i, x.device, self.index)

    def run_cpu(self, cpu_tensors: list[_Tensor]) -> Any:
        it = iter(cpu_tensors)
        leaves = [next(it) if t else x for x, t in zip(self.others, self.is_tensor, strict=True)]
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        if self.random:
            with rng.swapped_in(self.index):
                return self.op(*args, **kwargs)
        return self.op(*args, **kwargs)


def _cpu(t: _Tensor, requires_grad: bool) -> _Tensor:
    if t.device.type != "neuron":
        return t
    if torch.is_inference_mode_enabled() and not t.is_inference():
        # The CPU path differs for inference tensors: the view must be a normal tensor like `t`.
        with torch.inference_mode(False):
            c = storage.active().fresh_cpu_view(t)
    else:
        c = storage.active().fresh_cpu_view(t)
    return c.requires_grad_(True) if requires_grad else c


def _neuron(c: Any, index: int) -> Any:
    if isinstance(c, _Tensor) and c.device.type == "cpu":
        if _batched(c):  # vmap over the gradients (gradcheck's batched check, is_grads_batched): a copy
            return c.to(devices.DEVICES[index])
        return storage.active().to_neuron(c.detach(), index)
    return c


def _cpu_grad(g: _Tensor) -> _Tensor:
    """An incoming gradient as the island's CPU graph takes it: a neuron one as a zero-copy CPU view,
    a batched one (:func:`_batched`) by a copy."""
    if g.device.type != "neuron":
        return g
    return g.cpu() if _batched(g) else storage.active().fresh_cpu_view(g)


def _batched(t: _Tensor) -> bool:
    """Whether `t` is a vmap wrapper (torch.vmap's, or the legacy one ``torch.autograd.grad(...,
    is_grads_batched=True)`` and gradcheck's batched check use): it has no memory of its own to view
    zero-copy, so an island's result leaves it by a copy, which vmap batches like any op."""
    return bool(torch._C._functorch.is_batchedtensor(t) or torch._C._functorch.is_legacy_batchedtensor(t))


class _Island(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, call: _Call, *tensors: _Tensor) -> Any:  # type: ignore[override]
        needs = ctx.needs_input_grad[1:]
        cpu_in = [_cpu(t, bool(n) and t.device.type == "neuron") for t, n in zip(tensors, needs, strict=True)]
        with torch.enable_grad():
            out = call.run_cpu(cpu_in)
        flat, spec = pytree.tree_flatten(out)
        grad_in = [c if c.requires_grad and c.is_leaf else None for c in cpu_in]
        ctx.n_saved = len(tensors)
        # Version counters of the inputs: in-place changes after forward are caught in backward.
        if torch._C._autograd._top_saved_tensors_default_hooks(False) is None:
            # The CPU graph's ends go with the node's saved tensors: the engine frees them after a
            # backward unless retain_graph=True, as it frees the CPU's own saved tensors.
            ctx.in_slots = [i for i, c in enumerate(grad_in) if c is not None]
            ctx.out_slots = [i for i, c in enumerate(flat) if isinstance(c, _Tensor)]
            ctx.sizes = (len(grad_in), len(flat))
            ctx.save_for_backward(*tensors, *(grad_in[i] for i in ctx.in_slots), *(flat[i] for i in ctx.out_slots))
        else:  # hooks would pack the CPU graph's tensors: keep them here, freed by the first backward
            ctx.in_slots = None
            ctx.cpu_in, ctx.cpu_out = grad_in, flat
            ctx.save_for_backward(*tensors)
        result = [_neuron(c, call.index) for c in flat]
        ctx.index = call.index
        ctx.mark_non_differentiable(
            *(r for r, c in zip(result, flat, strict=True) if isinstance(r, _Tensor) and not c.requires_grad)
        )
        ctx.spec = spec
        return tuple(result)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:  # type: ignore[override]
        # raises if an input was modified in place since forward, or the graph was freed
        saved = ctx.saved_tensors
        cpu_in, cpu_out = _graph_ends(ctx, saved)
        outs, gouts, given = [], [], []
        for o, g in zip(cpu_out, grads, strict=True):
            if isinstance(o, _Tensor) and o.requires_grad and g is not None:
                outs.append(o)
                gouts.append(_cpu_grad(g))
                given.append(g)
        inputs = [c for c in cpu_in if c is not None]
        result: list[Any] = [None] * len(cpu_in)
        kept = ctx.in_slots is not None  # the CPU graph is freed with the saved tensors, not here
        if outs and inputs:
            if torch.is_grad_enabled():  # create_graph=True: the gradients are recorded, on the CPU
                sources = [t for t, c in zip(saved[: ctx.n_saved], cpu_in, strict=True) if c is not None]
                ends = _Ends(outs, inputs, ctx.index)
                got = iter(ends.unpack(_IslandGrad.apply(ends, len(sources), *sources, *given)))
            else:
                got = iter(
                    _neuron(g, ctx.index)
                    for g in torch.autograd.grad(outs, inputs, gouts, allow_unused=True, retain_graph=kept)
                )
            for i, c in enumerate(cpu_in):
                if c is not None:
                    result[i] = next(got)
        if not kept:
            ctx.cpu_in = ctx.cpu_out = None
        return (None, *result)


class _Ends:
    """An island's CPU graph for :class:`_IslandGrad`: its outputs, its input leaves, and which
    first-order gradients came out None (unused inputs: None again, as on the CPU)."""

    def __init__(self, outs: list, inputs: list, index: int) -> None:
        self.outs, self.inputs, self.index = outs, inputs, index
        self.unused: list[bool] = []

    def unpack(self, got: tuple) -> list:
        return [None if u else g for g, u in zip(got, self.unused, strict=True)]


def _cpu_leaf(t: _Tensor) -> _Tensor:
    return _cpu(t, True) if t.device.type == "neuron" else t.detach().requires_grad_(True)


class _IslandGrad(torch.autograd.Function):
    """An island's backward under create_graph=True: the CPU's first-order gradients of the
    island's inputs, recorded on the CPU (from its inputs and the incoming gradients), whose own
    backward runs that CPU graph: second-order gradients as the CPU's."""

    @staticmethod
    def forward(ctx: Any, ends: _Ends, n: int, *tensors: _Tensor) -> Any:  # type: ignore[override]
        gouts = [_cpu_leaf(g) for g in tensors[n:]]
        with torch.enable_grad():
            first = torch.autograd.grad(
                ends.outs, ends.inputs, gouts, allow_unused=True, retain_graph=True, create_graph=True
            )
        ends.unused = [f is None for f in first]
        ctx.ends, ctx.gouts, ctx.first = ends, gouts, first
        ctx.on_neuron = [t.device.type == "neuron" for t in tensors]
        ctx.set_materialize_grads(False)
        return tuple(
            torch.zeros_like(t) if f is None else _neuron(f, ends.index)
            for f, t in zip(first, tensors[:n], strict=True)
        )

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:  # type: ignore[override]
        ends = ctx.ends
        outs, gouts = [], []
        for f, g in zip(ctx.first, grads, strict=True):
            if f is not None and f.requires_grad and g is not None:
                outs.append(f)
                gouts.append(_cpu_grad(g))
        wrt = [*ends.inputs, *ctx.gouts]
        if not outs:
            return (None, None, *([None] * len(wrt)))
        got = torch.autograd.grad(outs, wrt, gouts, allow_unused=True, retain_graph=True)
        back = (
            None if g is None else _neuron(g, ends.index) if n else g
            for g, n in zip(got, ctx.on_neuron, strict=True)
        )
        return (None, None, *back)


def _graph_ends(ctx: Any, saved: tuple) -> tuple[list, list]:
    """The island's CPU inputs (None where no gradient flows) and flat CPU outputs."""
    if ctx.in_slots is None:
        return ctx.cpu_in, ctx.cpu_out
    graph = iter(saved[ctx.n_saved :])
    cpu_in: list[Any] = [None] * ctx.sizes[0]
    for i in ctx.in_slots:
        cpu_in[i] = next(graph)
    cpu_out: list[Any] = [None] * ctx.sizes[1]
    for i in ctx.out_slots:
        cpu_out[i] = next(graph)
    return cpu_in, cpu_out


def _kernel(op: Any, autograd: bool):
    def kernel(*args: Any, **kwargs: Any) -> Any:
        call = _Call(op, args, kwargs)
        if autograd and torch.is_grad_enabled() and any(t.requires_grad for t in call.tensors):
            return _unflatten(op, _Island.apply(call, *call.tensors))
        # The CPU path looks at requires_grad even without grad mode (oneDNN's GRU/RNN): keep the flags.
        out = call.run_cpu([_cpu(t, t.requires_grad) for t in call.tensors])
        return pytree.tree_map(lambda c: _neuron(c, call.index), out)

    kernel.__name__ = f"neuron_island_{op._schema.name.split('::')[-1]}"
    return kernel


def _unflatten(op: Any, flat: tuple) -> Any:
    """The island's flat outputs in the op's return shape (a Tensor or a tuple of Tensors)."""
    if len(op._schema.returns) == 1:
        return flat[0]
    return tuple(flat)


def register(lib: torch.library.Library) -> None:
    """Register the islands in `lib` (an aten IMPL library) at AutogradPrivateUse1 and PrivateUse1."""
    for name in RNN_OPS:
        base, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, base), overload or "default")
        lib.impl(name, _kernel(op, autograd=True), "AutogradPrivateUse1")
        lib.impl(name, _kernel(op, autograd=False), "PrivateUse1")
