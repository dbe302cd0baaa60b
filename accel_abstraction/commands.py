"""The ``accel`` subcommands: what a command is, and the built-in ones, registered as a plugin.

Every subcommand, built-in or a third party's, reaches the CLI through the
``accel_register_commands(register)`` hook (like llm's ``register_commands``)::

    from accel_abstraction import hookimpl
    from accel_abstraction.commands import CommandSpec

    @hookimpl
    def accel_register_commands(register):
        register(CommandSpec("profile", "profile a training step", "my_pkg.accel_profile"))

``module`` is imported only when its command runs (or for ``accel --help``), so a command
costs nothing to the others: ``accel scan`` never imports torch, ``accel info`` never libcst.
The module exposes ``add_parser(subparsers)``, which adds the subcommand's parser and sets
its ``func`` (``args -> exit code``); a module may add several subcommands.

The built-in commands are the hook implementation in this module, registered with the plugin
host by :func:`collect_commands` (not through an entry point, so ``ACCEL_PLUGINS`` cannot
remove them; and not by every host, so a training script's first ``accel.device()`` does
not import this module).
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import PluginError
from .hookspecs import hookimpl

if TYPE_CHECKING:
    from .plugins import PluginHost

__all__ = ["BUILTIN_PLUGIN_NAME", "CommandSpec", "accel_register_commands", "collect_commands"]

BUILTIN_PLUGIN_NAME = "accel-builtin-commands"
_NAME_RE = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class CommandSpec:
    """A subcommand of ``accel``: its name, one-line help, and the module that builds its parser."""

    name: str
    help: str
    module: str
    needs_backends: bool = True
    """False: the command uses no backend, so only plugins' tools modules are imported for it
    (``accel_abstraction.plugin_discovery``)."""
    imports_torch: bool = False
    """The module imports torch when it is imported: the CLI imports torch before it (so that a
    backend plugin's ``torch.backends`` autoload never meets our modules half-imported)."""

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ValueError(f"command name {self.name!r} must be lower-case letters, digits and '-'")


BUILTIN_COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("info", "show plugins, backends, the selected backend and why", "accel_abstraction.info"),
    CommandSpec(
        "config", "show every effective setting, its value and its source", "accel_abstraction.config_cli",
        needs_backends=False,
    ),
    CommandSpec(
        "scan", "find CUDA coupling in Python code (reads it; never runs it)", "accel_abstraction.porting.cli",
        needs_backends=False,
    ),
    CommandSpec(
        "port", "rewrite CUDA coupling to the accel_abstraction API", "accel_abstraction.porting.cli",
        needs_backends=False,
    ),
    CommandSpec(
        "run", "run CUDA code unchanged on the selected backend", "accel_abstraction.redirect.cli", imports_torch=True
    ),
    CommandSpec(
        "parity", "run a training script on several backends and compare", "accel_abstraction.parity.cli"
    ),
    CommandSpec(
        "patches", "list, check, apply or revert the PyTorch patch series", "accel_abstraction.patching.cli",
        needs_backends=False,
    ),
    CommandSpec(
        "test", "self-test: a bundled tiny model on cpu and every backend that runs here",
        "accel_abstraction.selftest.cli",
    ),
)  # fmt: skip


@hookimpl
def accel_register_commands(register: Callable[[CommandSpec], None]) -> None:
    """The built-in subcommands."""
    for spec in BUILTIN_COMMANDS:
        register(spec)


def collect_commands(host: PluginHost) -> dict[str, CommandSpec]:
    """Every plugin's commands, name -> spec; the built-ins first.

    Collected plugin by plugin (:meth:`PluginHost.collect`): a plugin whose hook raises or
    registers something that is not a :class:`CommandSpec` contributes nothing, one that takes
    a name already taken loses that name; each with a warning naming it, and the other
    commands stay usable.
    """

    def check(item: object) -> None:
        if not isinstance(item, CommandSpec):
            raise PluginError(f"register() takes an accel_abstraction.commands.CommandSpec, got {item!r}")

    if host.pm.get_plugin(BUILTIN_PLUGIN_NAME) is None:  # registered here, not by every host: first use stays cheap
        host.pm.register(sys.modules[__name__], name=BUILTIN_PLUGIN_NAME)
    pairs = host.collect("accel_register_commands", check)
    pairs.sort(key=lambda pair: pair[0] != BUILTIN_PLUGIN_NAME)  # stable: built-ins first
    commands: dict[str, CommandSpec] = {}
    owners: dict[str, str] = {}
    for plugin, spec in pairs:
        if spec.name in commands:
            warnings.warn(
                f"accel plugin {plugin!r} registers command {spec.name!r}, which {owners[spec.name]!r} "
                "already provides: ignored",
                RuntimeWarning,
                stacklevel=2,
            )
            continue
        commands[spec.name] = spec
        owners[spec.name] = plugin
    return commands
