"""What the Python kernel needs to know about each op, read once from its schema (:class:`OpInfo`).

Per op: which arguments are written to and which results alias them, where a device or
generator argument sits, whether the op is random, whether it may change the geometry of an
argument, which arguments and results are CPU tensors by design (:mod:`.routing`), and the
storage path's functions the kernel calls (:func:`.storage.active`, read when the op is first
seen, after install). :func:`.fallback.run` reads it on every call; :func:`info_for` caches it.
"""

from __future__ import annotations

from typing import Any

import torch

from . import routing, storage

_COPY_OPS = routing.COPY_OPS
_CPU_ARGS = routing.CPU_ARGS
_CPU_RETURNS = routing.CPU_RETURNS
_RESHAPING_OPS = routing.RESHAPING_OPS


class OpInfo:
    """What the kernel needs to know about one op, read once from its schema."""

    __slots__ = (
        "name",
        "write_pos",
        "write_names",
        "ret_src",
        "device_pos",
        "device_name",
        "gen_pos",
        "gen_name",
        "seeded",
        "index_pos",
        "check_devices",
        "resync",
        "has_out",
        "check_out",
        "arg_names",
        "single_fresh",
        "cpu_args",
        "cpu_returns",
        "call",
        "view",
        "to_neuron",
    )

    def __init__(self, op: torch._ops.OpOverload) -> None:
        schema = op._schema
        self.call = op._op  # the C++ callable behind OpOverload.__call__ (one Python frame less)
        self.name = schema.name
        self.arg_names = [a.name for a in schema.arguments]
        self.cpu_returns = _CPU_RETURNS.get(self.name, frozenset())
        names = _CPU_ARGS.get(self.name, frozenset())
        self.cpu_args = frozenset({i for i, n in enumerate(self.arg_names) if n in names} | set(names))
        write_pos: list[int] = []
        write_names: list[str] = []
        alias_of: dict[str, tuple[int, str]] = {}
        self.device_pos = self.device_name = None
        self.gen_pos = self.gen_name = None
        self.index_pos: set[Any] = set()
        self.has_out = False
        for i, arg in enumerate(schema.arguments):
            where = arg.name if arg.kwarg_only else i
            t = str(arg.type)
            a = arg.alias_info
            if a is not None and a.is_write:
                if arg.kwarg_only:
                    self.has_out = True
                write_pos.append(i if not arg.kwarg_only else -1)
                write_names.append(arg.name)
                for s in a.before_set:
                    alias_of[s] = (i, arg.name)
            if t in ("Optional[Device]", "Device"):
                self.device_pos, self.device_name = where, arg.name
            elif t == "Optional[Generator]":
                self.gen_pos, self.gen_name = where, arg.name
            elif t == "List[Optional[Tensor]]":
                self.index_pos.add(where)
        self.write_pos = write_pos
        self.write_names = write_names
        ret_src: list[tuple[int, str] | None] = []
        for r in schema.returns:
            a = r.alias_info
            if a is not None and a.is_write:
                src = None
                for s in a.before_set:
                    src = alias_of.get(s, src)
                ret_src.append(src)
            else:
                ret_src.append(None)
        self.ret_src = ret_src
        self.single_fresh = (
            len(ret_src) == 1 and ret_src[0] is None and str(schema.returns[0].type) == "Tensor"
        )
        tags = op.tags
        self.seeded = torch.Tag.nondeterministic_seeded in tags and self.gen_name is None
        self.check_devices = self.name not in _COPY_OPS
        # written arguments (out=, in-place self) must be on the device: no 0-dim CPU exemption for them
        self.check_out = self.check_devices and bool(write_names)
        self.resync = bool(write_names) and (
            torch.Tag.inplace_view in tags or self.has_out or self.name in _RESHAPING_OPS
        )
        # The storage path's functions, read once (install() selected the path before any op ran):
        # a written argument re-pointed after the op needs a view of its own, not a cached one.
        path = storage.active()
        self.view = path.fresh_cpu_view if self.resync else path.cpu_view
        self.to_neuron = path.to_neuron


#: Every op seen so far -> its :class:`OpInfo` (the kernel reads it with one ``dict.get``).
infos: dict[Any, OpInfo] = {}


def info_for(op: Any) -> OpInfo:
    """The cached :class:`OpInfo` for `op`."""
    info = infos.get(op)
    if info is None:
        info = infos[op] = OpInfo(op)
    return info
