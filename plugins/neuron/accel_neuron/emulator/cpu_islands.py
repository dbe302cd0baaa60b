"""Ops that run, forward and backward, as the CPU's own autograd graph on neuron tensors.

Some composite ops decompose by device inside ATen: ``aten::lstm`` and
``aten::gru`` call the fused cells ``_thnn_fused_lstm_cell``/``_thnn_fused_gru_cell``
(only CUDA implements them) on any non-CPU device, batch the input projection
of a layer into one ``addmm`` only for CPU inputs, and use oneDNN's RNN only
for CPU tensors. Their neuron kernels ("islands") run the op on zero-copy CPU
views of the neuron tensors, with autograd recording the CPU graph, and hand
back neuron tensors over the same memory; backward runs that CPU graph with
the incoming gradients. Results, forward and backward, are the CPU's bit for
bit.

Where the storage path can share a version counter, the CPU graph joins the device's instead
(:mod:`.island_join`); the autograd Function below serves the other cases.

Under ``create_graph=True`` an island's backward is itself an island
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

from . import devices, fallback, island_join, rng, storage
from .errors import EmulatorError
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


# An argument's schema type (as str() writes it) -> whether it is a list of tensors.
_TENSOR_TYPES = {"Tensor": False, "Optional[Tensor]": False, "List[Tensor]": True}


class _Plan:
    """One op's argument layout, read once from its schema: which arguments hold tensors (a Tensor,
    an optional one, a list), and where dropout and train are. A call is taken apart and put back
    together on the CPU along it, with no generic tree walk."""

    def __init__(self, op: Any) -> None:
        self.op = op
        self.call = op._op  # the C++ callable behind OpOverload.__call__
        arguments = op._schema.arguments
        self.names = [a.name for a in arguments]
        self.defaults = [a.default_value if a.has_default_value() else None for a in arguments]
        types = [str(a.type) for a in arguments]
        unknown = [t for t in types if "Tensor" in t and t not in _TENSOR_TYPES]
        if unknown:  # a tensor the plan would not take out would reach the CPU op as a neuron one
            raise EmulatorError(
                f"cpu_islands: {op._schema.name} takes {unknown}, which an island cannot take apart; "
                "add the type to _TENSOR_TYPES (with how to take it apart) or leave the op off RNN_OPS"
            )
        self.tensor_args = [(i, _TENSOR_TYPES[t]) for i, t in enumerate(types) if t in _TENSOR_TYPES]
        self.checked = [(i, many) for i, many in self.tensor_args if self.names[i] not in _CPU_BY_DESIGN]
        self.dropout = self.names.index("dropout") if "dropout" in self.names else None
        self.train = self.names.index("train") if "train" in self.names else None
        self.single = len(op._schema.returns) == 1

    def positional(self, args: tuple, kwargs: dict) -> tuple:
        """The call's arguments by position (keyword ones put in their places, defaults between)."""
        if not kwargs:
            return args
        last = max(self.names.index(k) for k in kwargs)
        return args + tuple(
            kwargs[n] if n in kwargs else self.defaults[i]
            for i, n in enumerate(self.names[len(args) : last + 1], start=len(args))
        )


class _Call:
    """One call of the op of `plan`: its tensors taken out, to put CPU ones in their places."""

    __slots__ = ("plan", "op", "args", "tensors", "index", "random")

    def __init__(self, plan: _Plan, args: tuple, kwargs: dict) -> None:
        self.plan = plan
        self.op = plan.op
        self.args = args = plan.positional(args, kwargs)
        n = len(args)  # trailing defaults may be omitted
        tensors: list[_Tensor] = []
        for i, many in plan.tensor_args:
            if i < n:
                a = args[i]
                if many:
                    tensors.extend(a)
                elif a is not None:
                    tensors.append(a)
        self.tensors = tensors
        # Dropout between layers draws random numbers: from the device generator, as on a device.
        d, t = plan.dropout, plan.train
        self.random = d is not None and d < n and bool(args[d]) and t is not None and t < n and bool(args[t])
        on = {x.device for x in tensors}
        if len(on) == 1:  # the usual call: every tensor on one device (nothing to check)
            only = next(iter(on))
            self.index = only.index if only.type == "neuron" else devices.current()  # results go here
            return
        first = next((t for t in tensors if t.device.type == "neuron"), None)
        self.index = first.get_device() if first is not None else devices.current()
        if first is not None:
            self._check_devices(args)

    def _check_devices(self, args: tuple) -> None:
        n = len(args)
        for i, many in self.plan.checked:
            if i >= n:
                continue
            for x in args[i] if many else (args[i],):
                if not isinstance(x, _Tensor):
                    continue
                if (x.device.type == "cpu" and x.dim() != 0) or (
                    _is_neuron(x) and x.get_device() != self.index
                ):
                    info = info_for(self.op)
                    if not self.random:  # the op's own checks speak first, as on CUDA
                        fallback.own_checks_first(self.op, info.name, lambda: self.run_cpu(_cpu_all(self.tensors)))
                    raise fallback.device_mismatch(info, i, x.device, self.index)

    def run_cpu(self, cpu_tensors: list[_Tensor]) -> list:
        """The op on `cpu_tensors` (the call's tensors' CPU stand-ins, in order): its result as a flat
        list (a Tensor, or a tuple of Tensors)."""
        args = list(self.args)
        n = len(args)
        it = iter(cpu_tensors)
        for i, many in self.plan.tensor_args:
            if i < n:
                a = args[i]
                if many:
                    args[i] = [next(it) for _ in a]
                elif a is not None:
                    args[i] = next(it)
        if self.random:
            with rng.swapped_in(self.index):
                out = self.plan.call(*args)
        else:
            out = self.plan.call(*args)
        return list(out) if isinstance(out, (tuple, list)) else [out]


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


def _cpu_all(tensors: list[_Tensor], grad: Any = None) -> list[_Tensor]:
    """:func:`_cpu` of each of `tensors`, requiring grad where `grad` (one flag per tensor; None:
    none does) says so: one look-up of the storage path for the call."""
    if torch.is_inference_mode_enabled():
        return [_cpu(t, bool(g)) for t, g in zip(tensors, grad or [False] * len(tensors), strict=True)]
    view = storage.active().fresh_cpu_view
    out = []
    for t, g in zip(tensors, grad or [False] * len(tensors), strict=True):
        if t.device.type == "neuron":
            t = view(t)
            if g:
                t.requires_grad_(True)
        out.append(t)
    return out


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


_engine = torch.autograd.Variable._execution_engine  # the process's one autograd engine


def _run_engine(outs: list, gouts: list, inputs: list, retain_graph: bool) -> tuple:
    """``torch.autograd.grad(outs, inputs, gouts, allow_unused=True, retain_graph=...)`` without its Python:
    the gradients come from the outer engine run, which already checked them against these outputs'
    metadata (shape, dtype, device), and `inputs` are the island's own CPU leaves."""
    return _engine.run_backward(tuple(outs), tuple(gouts), retain_graph, False, tuple(inputs), True, False)


def _neuron_all(cs: Any, index: int) -> list:
    """:func:`_neuron` of each of `cs`, with the storage path looked up once."""
    to_neuron = storage.active().to_neuron
    out = []
    for c in cs:
        if c.__class__ is _Tensor and c.is_cpu and not _batched(c):
            c = to_neuron(c.detach(), index)
        elif isinstance(c, _Tensor) and c.device.type == "cpu":
            c = _neuron(c, index)
        out.append(c)
    return out


class _Island(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, call: _Call, *tensors: _Tensor) -> Any:  # type: ignore[override]
        cpu_in = _cpu_all(list(tensors), ctx.needs_input_grad[1:])  # CPU tensors keep their flag
        with torch.enable_grad():
            flat = call.run_cpu(cpu_in)
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
        result = _neuron_all(flat, call.index)
        ctx.index = call.index
        ctx.mark_non_differentiable(
            *(r for r, c in zip(result, flat, strict=True) if isinstance(r, _Tensor) and not c.requires_grad)
        )
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
                got = iter(_neuron_all(_run_engine(outs, gouts, inputs, kept), ctx.index))
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
    plan = _Plan(op)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        call = _Call(plan, args, kwargs)
        if autograd and torch.is_grad_enabled() and any(t.requires_grad for t in call.tensors):
            path = storage.active()
            flat = island_join.forward(call, path) if island_join.joinable(path) else _Island.apply(call, *call.tensors)
        else:
            # The CPU path looks at requires_grad even without grad mode (oneDNN's GRU/RNN): keep the flags.
            out = call.run_cpu(_cpu_all(call.tensors, [t.requires_grad for t in call.tensors]))
            flat = _neuron_all(out, call.index)
        return flat[0] if plan.single else tuple(flat)  # the op's return shape

    kernel.__name__ = f"neuron_island_{op._schema.name.split('::')[-1]}"
    return kernel


def register(lib: torch.library.Library, compiled: bool = False) -> None:
    """Register the islands in `lib` (an aten IMPL library) at AutogradPrivateUse1 and PrivateUse1; with
    the compiled path (`compiled`), the C++ core's (``csrc/islands.cpp``: the common cases, no Python in
    the call) there, and these at AutogradPrivateUse3 / PrivateUse3, for every case the C++ ones hand over."""
    keys = ("AutogradPrivateUse3", "PrivateUse3") if compiled else ("AutogradPrivateUse1", "PrivateUse1")
    for name in RNN_OPS:
        base, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, base), overload or "default")
        lib.impl(name, _kernel(op, autograd=True), keys[0])
        lib.impl(name, _kernel(op, autograd=False), keys[1])
    if compiled:
        from . import native

        native.enable_native_islands(list(RNN_OPS))
