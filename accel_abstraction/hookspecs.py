"""Hook specifications: the whole contract between accel-abstraction and its plugins.

A plugin is a module (or object) published under the entry-point group
``accel_abstraction``; the built-in cpu, cuda and neuron backends are loaded exactly the
same way. It implements any of the hooks below with functions decorated by
:data:`hookimpl`::

    from accel_abstraction import hookimpl, BackendSpec

    @hookimpl
    def accel_register_backends(register):
        register(BackendSpec(name="mydev", factory=MyBackend, priority=50))

Hooks are extension points, called a handful of times per process. They are never on a
hot path: once a backend is selected, every ``accel.*`` call is a plain method call on
the backend object.

Arguments are passed by keyword; an implementation may accept any subset of them
(pluggy semantics), so new arguments never break an existing plugin.

Each plugin's implementation is called on its own (``PluginHost.call_each``), in pluggy's
order: ``@hookimpl(tryfirst=True)`` first, ``trylast=True`` last, otherwise the plugin
registered last first. What one raises (``SystemExit`` included) or prints on stdout stays
with that plugin (its record in ``accel info``). Hook wrappers (``hookwrapper=True``,
``wrapper=True``) are not run: there is no single call of every implementation to wrap;
``accel info`` shows the refusal on the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .commands import CommandSpec
    from .interface import Backend
    from .registry import BackendSpec
    from .sections import CoreSettings

PROJECT_NAME = "accel_abstraction"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# ---------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------


@hookspec
def accel_register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Offer backends by calling ``register(BackendSpec(...))`` once per backend.

    Called once per process, the first time the list of backends is needed (first
    ``accel.*`` call, ``accel.use()``, ``accel info``). Each plugin's implementation is
    called separately: if it raises, that plugin is marked failed (its traceback is shown
    by ``accel info``) and the other plugins' backends are still registered.

    A plugin's backends are registered all together or not at all: registering something
    that is not a ``BackendSpec``, or a name (or alias) another plugin already registered,
    marks this plugin failed (the warning and ``accel info`` name both distributions) and
    leaves the other plugins' backends usable.

    Keep this cheap: do not import heavy modules or touch a device here; do that in the
    backend's factory or in ``Backend.activate()``.
    """


@hookspec
def accel_backend_selected(backend: Backend, settings: CoreSettings) -> None:
    """React to the selection of ``backend``.

    Called once each time a backend becomes the selected one (at first use, on
    ``accel.use(name)``, and on entering and leaving ``accel.using(name)``), after the
    backend's own ``activate()`` ran. Typical uses: export environment variables a
    runtime reads, install logging, record the choice. Exceptions propagate to the caller
    of the selection unchanged, with the plugin's name in their ``accel_plugin``
    attribute (and a note), so that the ``accel`` CLI prints one line naming the plugin.
    """


# ---------------------------------------------------------------------------
# Diagnostics
# ---------------------------------------------------------------------------


@hookspec
def accel_env_info(backend: Backend) -> list[tuple[str, str]] | None:
    """Return ``(key, value)`` rows shown by ``accel info`` for the selected ``backend``.

    Called once per ``accel info`` run with the selected backend (which may belong to
    another plugin: return ``None`` if you have nothing to say about it). Rows from every
    plugin are concatenated in plugin order. Must not raise for an unavailable device.
    """


@hookspec
def accel_op_support(backend: Backend, register: Callable[[Any], None]) -> None:
    """Say what the hardware's vendor documents about ATen operators on ``backend``'s device.

    Call ``register(OpSupport(op, status, detail, source, release))``
    (:class:`accel_abstraction.op_usage.OpSupport`) once per operator whose support is
    documented as other than native: ``status`` is the vendor's own word (TorchNeuron's
    ``CPU_FALLBACK`` / ``N``), ``source`` the page and ``release`` the release it is read from.
    ``accel run --ops`` marks the operators a run used with these rows; an operator no plugin
    registers is shown as unknown. Register nothing for a backend that is not yours. Only
    documented facts belong here: a guess shown as a fact sends users after the wrong fix.
    """


# ---------------------------------------------------------------------------
# Porting tools
# ---------------------------------------------------------------------------


@hookspec
def accel_scan_rules(register: Callable[[Any], None]) -> None:
    """Add porting rules to ``accel scan`` and ``accel port`` by calling ``register(rule)``.

    ``rule`` is an :class:`accel_abstraction.porting.rules.Rule`: what it finds, and (a
    matcher returning a ``Match`` with a fix) how ``accel port`` rewrites it. The built-in
    rules come through this hook too. Called once per scan or port run, before any file is
    read, plugin by plugin: a plugin that raises or registers something invalid (not a
    ``Rule``, matching nothing, a code already taken) contributes no rules and a warning
    names it; the other plugins' rules are used. Rule codes must be unique and stable: they
    appear in suppression comments and CI configurations.
    """


@hookspec
def accel_redirects(backend: Backend, register: Callable[[Any], None]) -> None:
    """Add runtime redirects used by ``accel run`` / ``accel.redirect_cuda()``.

    Called when a redirect is installed, with the selected backend. ``register`` takes an
    :class:`accel_abstraction.redirect.Redirect`. Backends use it to route CUDA-only APIs
    that the generic redirect table cannot serve to their own implementation.
    """


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------


@hookspec
def accel_config_sections(register: Callable[[Any], None]) -> None:
    """Declare the plugin's configuration sections by calling ``register(section)``.

    ``section`` is a :class:`~accel_abstraction.sections.SectionSpec` (what
    :func:`~accel_abstraction.sections.declare` returns) or a
    :class:`~accel_abstraction.settings.ConfigSection` subclass. ``accel config show`` lists
    every field of every registered section with its effective value and its source; a plugin
    that registers nothing keeps its settings out of that listing only. Called only by
    ``accel config``; keep the implementation an import of the settings module.
    """


@hookspec
def accel_process_variables(register: Callable[[Any], None]) -> None:
    """Declare the plugin's process-level ``ACCEL_*`` variables by calling ``register(row)``.

    ``row`` is an :class:`accel_abstraction.environment.EnvVar`: a variable that is not a
    setting of a configuration section (those are declared by the section), read before or
    outside configuration (a switch of the plugin's runtime, a variable a tool sets for its
    child). ``docs/settings.md`` lists every registered row with its plugin, and the code reads
    it with ``accel_abstraction.environment.read(row)`` / ``flag(row)``. Called only by the
    settings reference and its tests; keep the implementation an import of the row.
    """


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


@hookspec
def accel_register_commands(register: Callable[[CommandSpec], None]) -> None:
    """Add subcommands to the ``accel`` CLI by calling ``register(CommandSpec(name, help, module))``.

    Called once per ``accel`` invocation, before arguments are parsed. ``module`` is an
    import path; it is imported only when its command runs (or for ``accel --help``) and
    must expose ``add_parser(subparsers)``, which adds the subcommand (``subparsers.add_parser``)
    and sets ``func`` (``args -> exit code``) on it. Keep the plugin module itself light: it
    is imported for every ``accel`` command. A name that is already taken (a built-in one,
    :data:`accel_abstraction.commands.BUILTIN_COMMANDS`, or another plugin's) is
    refused with a warning naming both; the first registration keeps it.
    See :mod:`accel_abstraction.commands`.
    """
