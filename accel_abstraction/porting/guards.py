"""Device-type tests and the names that hold device strings (the scanner's data-flow step).

A *device-type test* asks whether something is CUDA: ``device.type == "cuda"``,
``device_type != "cuda"``, ``"cuda" in device``, ``device.startswith("cuda")``,
``x.device.type in ("cuda",)``.  On another accelerator such a test is false, so the
branch it guards (``model.cuda()``, ``torch.cuda.synchronize()``) is silently skipped.
The portable form asks whether the device is the selected accelerator instead,
``accel.is_accelerator_device(x)``: the meaning on cpu and cuda is kept, the accelerator
branch is taken on any other accelerator, and ``meta``/``mps``/``xpu`` are not taken for it.

Which expressions are *device-ish* (the other side of such a test):
- attributes ``.type`` / ``.device_type`` (``x.device.type``, ``self.device_type``);
- names and attributes named like a device (``device``, ``dev``, ``device_type``,
  ``args.device``, ``train_device``);
- names assigned a device string anywhere in the module (``arg = "cuda:0"``), found by
  :func:`device_string_names`;
- ``str(e)`` of any of these.
Calls into ``accel`` or ``torch.accelerator`` are intentional and never reported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator

#: Names that hold a device or a device type by their name alone.
DEVICE_NAME = re.compile(r"(^|_)(device|dev)(_name|_str|_type)?$", re.IGNORECASE)
_CUDA_LITERAL = re.compile(r"^cuda(:\d+)?$")


def str_value(node: ast.AST | None) -> str | None:
    """The value of a string constant (an f-string without placeholders too: ``f"cuda"``), else ``None``."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
    return None


def last_name(node: ast.AST) -> str | None:
    """``x`` for ``x`` or ``a.b.x``; ``None`` for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def is_cuda_string(node: ast.AST | None) -> bool:
    """A literal ``"cuda"`` / ``"cuda:N"``, an f-string starting ``cuda:``, or an if-expression of one."""
    if isinstance(node, ast.IfExp):
        return is_cuda_string(node.body) or is_cuda_string(node.orelse)
    value = str_value(node)
    if value is not None:
        return _CUDA_LITERAL.match(value) is not None
    if isinstance(node, ast.JoinedStr) and node.values:
        head = str_value(node.values[0])
        return head is not None and head.startswith("cuda:")
    return False


def device_string_names(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """Names (and attribute names) assigned a CUDA device string in ``nodes`` (a module's walk)."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and is_cuda_string(node.value):
            for target in node.targets:
                name = last_name(target)
                if name:
                    names.add(name)
        elif isinstance(node, ast.AnnAssign) and is_cuda_string(node.value):
            name = last_name(node.target)
            if name:
                names.add(name)
    return frozenset(names)


def device_positions(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """Names passed where a device is expected (``torch.device(n)``, ``.to(n)``, ``device=n``) in ``nodes``."""
    names: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        candidates: list[ast.AST] = []
        if isinstance(func, ast.Attribute) and func.attr in ("to", "device") and node.args:
            candidates.append(node.args[0])
        candidates += [kw.value for kw in node.keywords if kw.arg in ("device", "map_location")]
        for arg in candidates:
            name = last_name(arg)
            if name:
                names.add(name)
    return frozenset(names)


def has_keyword(call: ast.Call, name: str) -> bool:
    """Whether ``call`` passes the keyword argument ``name``."""
    return any(k.arg == name for k in call.keywords)


#: A CUDA device string, ``cuda`` or ``cuda:N`` (group 1: N).
CUDA_DEVICE = re.compile(r"^cuda(?::(\d+))?$")
RANK_NAME = re.compile(
    r"^(local_rank|rank|gpu|gpu_id|gpu_idx|gpu_index|device_id|device_idx|device_index|dev_id|cuda_device)$",
    re.IGNORECASE,
)


def arg_of(call: ast.Call, index: int, keyword: str) -> tuple[ast.AST | None, int | str]:
    """The argument at ``index`` or named ``keyword``, and how to address it for ``drop``."""
    if len(call.args) > index and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index], index
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value, keyword
    return None, keyword


#: Calls whose first argument is an environment variable's name.
ENV_CALLS = frozenset({"os.environ.get", "os.getenv", "os.environ.setdefault", "os.environ.pop", "os.putenv", "os.unsetenv"})


def env_key_names(tree: ast.AST, qualname: Callable[[ast.AST], str | None]) -> frozenset[str]:
    """Names that reach ``os.environ`` / ``putenv`` as a variable's name (``os.environ[key] = value``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        key: ast.AST | None = None
        if isinstance(node, ast.Subscript) and qualname(node.value) == "os.environ":
            key = node.slice
        elif isinstance(node, ast.Call) and node.args and qualname(node.func) in ENV_CALLS:
            key = node.args[0]
        if isinstance(key, ast.Name):
            names.add(key.id)
    return frozenset(names)


def assigned_strings(target: ast.AST, value: ast.AST, names: frozenset[str]) -> Iterable[ast.AST]:
    """The values bound to one of ``names`` by ``target = value`` (``key, v = "NCCL_X", "1"`` too)."""
    if isinstance(target, ast.Name) and target.id in names:
        yield value
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts, strict=True):
            yield from assigned_strings(t, v, names)


def iterated_strings(target: ast.AST, iterable: ast.AST, names: frozenset[str]) -> Iterable[ast.AST]:
    """The values ``for target in iterable`` binds to one of ``names`` (a literal list or tuple of rows)."""
    if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
        for row in iterable.elts:
            yield from assigned_strings(target, row, names)


def callee(node: ast.AST) -> ast.AST:
    """``f`` for a call ``f(...)``, else the node itself."""
    return node.func if isinstance(node, ast.Call) else node


def own_returns(func: ast.AST) -> Iterator[ast.Return]:
    """The ``return`` statements of ``func`` itself (not of functions defined inside it)."""
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
