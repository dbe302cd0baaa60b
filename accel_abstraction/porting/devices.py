"""The scanner's value positions: where a value is a device, a process-group backend or an
environment variable's name, and which rule's shape check looks at it there.

A position decides nothing about CUDA itself: the shapes are the rules' (``"cuda:0"``:
``rules/acc101_*``, ``f"cuda:{i}"``: ``rules/acc103_*``, ``0`` / ``local_rank``: ``rules/acc104_*``,
``"nccl"``: ``rules/acc171_*``, ``CUDA_VISIBLE_DEVICES``: ``rules/acc192_*``, other CUDA variables:
``rules/acc199_*``). Rewrites keep the expression's type: a device string stays a string
(``"cuda"`` -> ``accel.device_type()``) wherever the value is stored or compared; only where a
call takes it as a device (``.to(...)``, ``device=``, ``torch.device(...)``) may it become
``accel.device(...)``.
"""

from __future__ import annotations

import ast

from .guards import DEVICE_NAME, last_name, str_value
from .reporting import Reporter
from .rules import VISITS
from .rules import acc101_cuda_device_string as acc101
from .rules import acc103_runtime_device_string as acc103
from .rules import acc104_integer_device as acc104
from .rules import acc171_nccl_backend as acc171
from .rules import acc192_visible_devices as acc192
from .rules import acc199_cuda_env as acc199

_STRING_CHECKS = VISITS.get("string", ())


class DeviceChecks(Reporter):
    """Mixin of the scanner: the value positions, each handing its value to the rules' shape checks."""

    #: names holding a CUDA device ordinal in this module (set by :class:`.context.ScanContext`)
    ordinal_names: frozenset[str] = frozenset()

    # ---- device strings
    def device_value(self, node: ast.AST | None, allow_int: bool = False, string_typed: bool = False) -> None:
        """Report ``node`` if it names a CUDA device where a device is expected.

        ``string_typed``: the value is stored or compared as a string (an assignment, a
        default, a dict value), so its rewrite must stay a string.
        """
        if node is None or id(node) in self.done:
            return
        if isinstance(node, ast.IfExp):
            self.device_value(node.body, allow_int, string_typed)
            self.device_value(node.orelse, allow_int, string_typed)
            return
        value = str_value(node)
        if value is not None:
            acc101.device_string(self, node, value, string_typed)  # type: ignore[arg-type]
            return
        if self.runtime_string(node, string_typed):
            return
        if allow_int:
            acc104.integer_device(self, node)  # type: ignore[arg-type]

    def runtime_string(self, node: ast.AST, string_typed: bool = True) -> bool:
        """A device string built at run time (ACC103); whether ``node`` was one."""
        return acc103.runtime_string(self, node, string_typed)  # type: ignore[arg-type]

    def call_positions(self, node: ast.Call, attr: str) -> None:
        """The device and backend positions of a method call: ``x.to(d)``, ``add_argument("--device", default=d)``."""
        if attr == "to":
            if node.args:
                self.device_value(node.args[0], allow_int=True)
        elif attr == "add_argument" or (attr == "option" and isinstance(node.func, ast.Attribute) and last_name(node.func.value) == "click"):
            options = [str_value(a) or "" for a in node.args]
            for kw in node.keywords:
                if kw.arg == "default":
                    if any("device" in o for o in options):
                        self.device_value(kw.value, string_typed=True)
                    elif any("backend" in o for o in options):
                        self.backend_value(kw.value)

    def keyword_position(self, name: str, value: ast.AST) -> None:
        """``device=``, ``map_location=``, ``pin_memory_device=``, ``backend=`` of any call."""
        if name in ("device", "map_location"):
            self.device_value(value, allow_int=name == "device")
        elif name == "pin_memory_device":
            self.device_value(value, string_typed=True)
        elif name == "backend":
            self.backend_value(value)

    def named_value(self, name: str, value: ast.AST) -> None:
        """A value bound to a name that says what it is (``device = ...``, a ``dist_backend`` default, a dict key)."""
        if DEVICE_NAME.search(name):
            self.device_value(value, string_typed=True)
        elif acc171.BACKEND_NAME.search(name):
            self.backend_value(value)

    # ---- process-group backends
    def backend_value(self, node: ast.AST | None) -> None:
        acc171.backend_value(self, node)  # type: ignore[arg-type]

    # ---- strings anywhere
    def constant(self, node: ast.Constant) -> None:
        """Strings that are coupling wherever they stand (``"nccl"``, nvidia-smi, nvcc flags): the rules' ``"string"`` checks."""
        if not isinstance(node.value, str) or id(node) in self.done:
            return
        for check in _STRING_CHECKS:
            check(self, node)

    # ---- environment
    def env_name(self, node: ast.AST, paren: bool = False) -> None:
        """An environment variable's name (``os.environ[...]``, ``os.getenv(...)``, a key variable)."""
        name = str_value(node)
        if name is None or id(node) in self.done:
            return
        self.done.add(id(node))
        if not acc192.visible_devices_name(self, node, name, paren):  # type: ignore[arg-type]
            acc199.cuda_env_name(self, node, name)  # type: ignore[arg-type]
