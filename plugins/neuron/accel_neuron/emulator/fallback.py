"""The PrivateUse1 kernel: run every aten op with the CPU kernel on zero-copy views.

One generic kernel serves all ops. Per op it caches what it needs from the
schema (:class:`OpInfo`): which arguments are written to, where a device or
generator argument sits, whether the op is random, whether it may change the
geometry of an argument. A call then

1. checks devices like CUDA does (a CPU tensor meeting a neuron tensor, or
   tensors on two neuron devices, is an error, except 0-dim CPU tensors, CPU
   index tensors and copies), and picks the device of the result (an explicit
   device argument, else the device of the neuron arguments, else the current
   device),
2. swaps neuron tensors for CPU views, ``device="neuron"`` for ``"cpu"`` and
   an absent generator for the generator of the result's device,
3. runs the op (below autograd, so the CPU kernel runs),
4. returns written arguments as they were passed, and maps other CPU results
   back to neuron tensors over the same memory (views stay views).

The kernel is installed as the PrivateUse1 fallback and, explicitly, for ops
with a CompositeExplicitAutograd kernel: those would otherwise win over a
fallback and run their decomposition op by op (slower, and for random ops not
what the CPU runs); :mod:`.kernel_keys` registers it (and says on which dispatch key).

The per-op hot path: its helpers stay module-local so a call costs plain local lookups, and the
storage path's functions come from the op's :class:`OpInfo` (:mod:`.op_info`). The rare cases
live next to it: written arguments re-pointed or grown (:mod:`.written_args`) and the refusals
of sparse, nested and quantized tensors (:mod:`.layout_refusals`).
"""

from __future__ import annotations

from typing import Any

import torch

from . import accelerator_dtypes, devices, memory, rng
from .layout_refusals import nested_limit, quantized_limit, sparse_limit
from .op_info import OpInfo, info_for
from .op_info import infos as _infos
from .written_args import arg as _arg
from .written_args import materialize as _materialize
from .written_args import resync as _resync
from .written_args import run_out as _run_out

_Tensor = torch.Tensor
_device_cls = torch.device
_CPU = torch.device("cpu")
_generators = rng.generators
_cpu_generator_of = rng.cpu_generator_of


def device_mismatch(info: OpInfo, where: Any, found: Any = "cpu", expected: int = 0) -> RuntimeError:
    """The error a CUDA kernel raises when tensors on two devices meet (`found`: the odd one's device)."""
    arg = where if isinstance(where, str) else info.arg_names[where]
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, neuron:{expected} "
        f"and {found}! (argument '{arg}' of {info.name} is on {found}; move it with .to('neuron:{expected}'))"
    )


#: Ops whose kernel checks its index tensors' devices itself, before any device comparison: on CUDA
#: ``aten::index`` (``x[i]``) asks that every index be on the CPU or on the indexed tensor's device.
_OWN_INDEX_CHECK = frozenset({"aten::index"})


def _indices_elsewhere(indexed: torch.device) -> RuntimeError:
    """CUDA's error for indices on neither the CPU nor `indexed`, the indexed tensor's device."""
    return RuntimeError(
        f"indices should be either on cpu or on the same device as the indexed tensor ({indexed}) "
        f"(move the indices with .to('{indexed}'), or the tensor to their device)"
    )


def _raise_mismatch(info: OpInfo, where: Any, args: tuple, kwargs: dict, index: int) -> None:
    """Find the tensor at `where` (or in the list there) that is not on neuron:`index`, and raise."""
    if info.name in _OWN_INDEX_CHECK:  # every mismatch of x[i] is an index off x's device (and off the CPU)
        raise _indices_elsewhere((args[0] if args else kwargs["self"]).device)
    value = kwargs.get(where) if isinstance(where, str) else args[where]
    for t in value if isinstance(value, (list, tuple)) else (value,):
        if isinstance(t, _Tensor) and t.device != devices.DEVICES[index] and not (t.is_cpu and t.dim() == 0):
            raise device_mismatch(info, where, t.device, index)
    raise device_mismatch(info, where, _CPU, index)  # pragma: no cover - `where` always holds one


def own_checks_first(op: Any, name: str, run: Any) -> None:
    """Raise what a composite op's own argument checks raise, before a device mismatch is reported.

    On CUDA a composite op (``embedding``, ``gru_cell``: CompositeImplicit/ExplicitAutograd) runs
    its own checks (index dtype, input size) before any inner kernel compares devices, so a wrong
    argument is reported as such even when a tensor is also on the wrong device; an op with a
    kernel of its own compares devices first. Called only on that error path, and only for an op
    that writes no argument and draws no random number (running it changes nothing): ``run()``
    runs the op on the CPU; an error it raises is the one CUDA gives; if it runs, the caller
    reports the device mismatch.
    """
    overload = getattr(op, "_overloadname", "default")
    qualified = name if overload == "default" else f"{name}.{overload}"
    if not any(torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key)
               for key in ("CompositeImplicitAutograd", "CompositeExplicitAutograd")):  # fmt: skip
        return
    try:
        with torch.no_grad():
            run()
    except (RuntimeError, ValueError, TypeError, IndexError) as own:
        raise own.with_traceback(None) from None


def _note_device(state: list, t: torch.Tensor, where: Any) -> None:
    """Record neuron tensor `t`'s device in `state`, or `where` as the first mismatch."""
    j = t.get_device()
    if state[0] != j:
        if state[0] < 0:
            state[0] = j
        elif state[1] is None:
            state[1] = where


def _convert_seq(info: OpInfo, value: list | tuple, where: Any, view: Any, state: list) -> Any:
    """Convert a list argument (Tensor[], Tensor?[]); `state` = [neuron index or -1, first offending position]."""
    first = value[0]
    index_arg = where in info.index_pos
    if not (isinstance(first, _Tensor) or (first is None and index_arg)):
        return value
    out = []
    for v in value:
        if isinstance(v, _Tensor):
            if v.is_cpu:
                if not index_arg and state[1] is None and v.dim() != 0:
                    state[1] = where
                out.append(v)
            else:
                _note_device(state, v, where)
                out.append(view(v))
        else:
            out.append(v)
    return out


def _convert_one(info: OpInfo, value: Any, where: Any, view: Any, state: list) -> Any:
    if isinstance(value, _Tensor):
        if value.is_cpu:
            if state[1] is None and value.dim() != 0:
                state[1] = where
            return value
        _note_device(state, value, where)
        return view(value)
    cls = value.__class__
    if (cls is list or cls is tuple) and value:
        return _convert_seq(info, value, where, view, state)
    if cls is _device_cls and value.type != "cpu":
        return _CPU
    return value


def run(op: Any, info: OpInfo, args: tuple, kwargs: dict) -> Any:
    """Run `op` with the CPU kernel on CPU views of its neuron arguments."""
    view = info.view  # the storage path's CPU view (a fresh one when a written argument may be re-pointed)
    if info.write_pos:
        _materialize(info, args, kwargs)  # copy-on-write written arguments get their own memory first
    index = -1  # device index of the neuron arguments (-1: none seen yet)
    bad = None  # position of the first argument on another device
    cargs = list(args)
    for i, a in enumerate(args):
        if isinstance(a, _Tensor):
            if a.is_cpu:
                if bad is None and a.dim() != 0:
                    bad = i
            else:
                j = a.get_device()
                if index != j:
                    if index < 0:
                        index = j
                    elif bad is None:
                        bad = i
                cargs[i] = view(a)
        elif a.__class__ is list or a.__class__ is tuple or a.__class__ is _device_cls:
            state = [index, bad]
            cargs[i] = _convert_one(info, a, i, view, state)
            index, bad = state
    if kwargs:
        state = [index, bad]
        ckwargs = {k: _convert_one(info, v, k, view, state) for k, v in kwargs.items()}
        index, bad = state
    else:
        ckwargs = {}
    if bad is not None and index >= 0 and info.check_devices:
        if info.cpu_args and bad in info.cpu_args:
            bad = _first_misplaced(info, args, kwargs, index)
        if bad is not None:
            if not (info.write_pos or info.has_out or info.seeded):
                own_checks_first(op, info.name, lambda: info.call(*cargs, **ckwargs))
            _raise_mismatch(info, bad, args, kwargs, index)
    if info.check_out:
        _check_outputs(info, args, kwargs, index)

    # Output device: an explicit device argument decides, else the neuron arguments', else the current one.
    to_cpu = False
    out_index = index
    if info.device_name is not None:
        dev = (
            kwargs.get(info.device_name)
            if isinstance(info.device_pos, str)
            else (args[info.device_pos] if info.device_pos < len(args) else None)
        )
        if dev is not None:
            dev = torch.device(dev)
            to_cpu = dev.type == "cpu"
            if not to_cpu:
                j = dev.index
                out_index = devices.current() if j is None else devices.check(j)
    if out_index < 0:
        out_index = devices.current()
    if info.gen_name is not None:
        pos = info.gen_pos
        gen = _generators[out_index]
        if isinstance(pos, str):
            given = ckwargs.get(pos)
            ckwargs[pos] = gen if given is None else _cpu_generator_of(given)
        elif pos < len(cargs):
            given = cargs[pos]
            cargs[pos] = gen if given is None else _cpu_generator_of(given)
        else:
            ckwargs[info.gen_name] = gen

    try:
        if info.seeded:
            with rng.swapped_in(out_index):
                out = op(*cargs, **ckwargs)
        elif info.has_out:
            out = _run_out(op, info, args, kwargs, cargs, ckwargs)
        else:
            try:
                out = info.call(*cargs, **ckwargs)
            except NotImplementedError:  # a dtype the CPU kernel rejects: computed as CUDA does, if covered
                done = accelerator_dtypes.computed(op, args, kwargs)
                if done is None:
                    raise
                return done
    except RuntimeError as e:  # the host could not allocate: the device is out of memory
        oom = memory.host_failure(e, out_index)
        if oom is None:
            raise
        raise oom from None

    if info.resync:
        _resync(info, args, kwargs, cargs, ckwargs)
    if out is None:
        return None
    try:
        if out.__class__ is _Tensor and info.single_fresh:
            return out if to_cpu or not out.is_cpu else info.to_neuron(out, out_index)
        return _wrap(info, out, args, kwargs, to_cpu, out_index)
    except NotImplementedError:
        # A sparse CPU result ("Cannot access storage of SparseTensorImpl"), a nested or a quantized one
        # has no neuron twin.
        for x in torch.utils._pytree.tree_leaves(out):
            if isinstance(x, _Tensor):
                if x.is_nested:
                    raise nested_limit(info.name) from None
                if x.layout != torch.strided:
                    raise sparse_limit(info.name, x.layout) from None
                if x.is_quantized:
                    raise quantized_limit(info.name) from None
        raise


def _check_outputs(info: OpInfo, args: tuple, kwargs: dict, index: int) -> None:
    """Raise CUDA's device error if a written argument (out=, in-place self) is a CPU tensor, even 0-dim."""
    for pos, name in zip(info.write_pos, info.write_names, strict=True):
        value = _arg(info, pos, name, args, kwargs)
        for t in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(t, _Tensor) and t.is_cpu:
                raise device_mismatch(
                    info, name if pos < 0 else pos, _CPU, devices.current() if index < 0 else index
                )


def _first_misplaced(info: OpInfo, args: tuple, kwargs: dict, index: int) -> Any:
    """The first argument off neuron:`index` that is not CPU by design (nor a 0-dim CPU tensor), or None."""
    dev = devices.DEVICES[index]
    for where, value in [*enumerate(args), *kwargs.items()]:
        if where in info.cpu_args or where in info.index_pos:
            continue
        for v in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(v, _Tensor) and v.device != dev and not (v.is_cpu and v.dim() == 0):
                return where
    return None


def _wrap(info: OpInfo, out: Any, args: tuple, kwargs: dict, to_cpu: bool, index: int) -> Any:
    if out is None:
        return None
    _to_neuron = info.to_neuron
    if isinstance(out, _Tensor):
        src = info.ret_src[0] if info.ret_src else None
        if src is not None:
            return _arg(info, src[0], src[1], args, kwargs)
        if to_cpu or not out.is_cpu:
            return out
        return _to_neuron(out, index)
    if isinstance(out, (tuple, list)):
        if len(info.ret_src) == 1 and isinstance(out, list):
            # one Tensor[] return
            src = info.ret_src[0]
            if src is not None:
                return _arg(info, src[0], src[1], args, kwargs)
            if to_cpu:
                return out
            return [_to_neuron(x, index) if isinstance(x, _Tensor) and x.is_cpu else x for x in out]
        res = []
        for i, x in enumerate(out):
            src = info.ret_src[i] if i < len(info.ret_src) else None
            if src is not None:
                res.append(_arg(info, src[0], src[1], args, kwargs))
            elif isinstance(x, _Tensor) and x.is_cpu and not to_cpu and i not in info.cpu_returns:
                res.append(_to_neuron(x, index))
            elif isinstance(x, list):
                res.append(
                    [
                        _to_neuron(y, index) if isinstance(y, _Tensor) and y.is_cpu and not to_cpu else y
                        for y in x
                    ]
                )
            else:
                res.append(x)
        return tuple(res) if isinstance(out, tuple) else res
    return out


def fallback_kernel(op: Any, *args: Any, **kwargs: Any) -> Any:
    """The PrivateUse1 fallback: every op without its own neuron kernel lands here."""
    info = _infos.get(op)
    if info is None:
        info = info_for(op)
    return run(op, info, args, kwargs)
