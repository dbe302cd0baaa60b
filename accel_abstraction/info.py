"""``accel info``: plugins, backends, the selection and why, devices and capabilities."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from typing import Any

from .errors import PLUGIN_ATTR, AccelError, headline

__all__ = ["add_parser", "collect", "system_versions"]


def collect() -> dict[str, Any]:
    """Everything ``accel info`` shows, as JSON-ready data. Never raises for a selection error."""
    from .plugins import get_host

    host = get_host()
    report: dict[str, Any] = {"system": system_versions(), "plugins": [], "backends": []}
    _fill(report, host)
    # last: a plugin's hooks called while filling (accel_env_info, ...) may have failed or printed
    report["plugins"] = [
        {
            "name": r.name,
            "distribution": r.distribution,
            "version": r.version,
            "status": r.status,
            "legacy": r.legacy,
            "error": r.error,
            "traceback": r.traceback,
            "backends": r.backends,
            "problems": r.problems,
            "output": r.output,
        }
        for r in host.records.values()
    ]
    return report


def _fill(report: dict[str, Any], host: Any) -> None:
    """The backends, the selection and its details, into ``report``."""
    from . import runtime
    from .sections import CORE
    from .selection import build_backend, probe

    try:
        settings = CORE.load()
    except AccelError as exc:
        settings = None
        report["config_error"] = str(exc)
    for entry in host.registry.by_priority():
        row: dict[str, Any] = {
            "name": entry.spec.name,
            "aliases": list(entry.spec.aliases),
            "priority": entry.spec.priority,
            "plugin": entry.plugin,
            "distribution": entry.distribution,
        }
        try:
            avail = probe(build_backend(entry, settings), entry)
            row.update(available=avail.available, reason=avail.reason, hint=avail.hint)
        except AccelError as exc:
            row.update(available=False, reason=headline(exc), hint="")
        report["backends"].append(row)
    try:
        sel = runtime.selection()
    except AccelError as exc:
        report["selected"] = None
        report["selection_error"] = headline(exc)
        return
    except Exception as exc:
        plugin = getattr(exc, PLUGIN_ATTR, None)
        if plugin is None:
            raise
        report["selected"] = None
        report["selection_error"] = (
            f"plugin {plugin!r} failed in accel_backend_selected: {type(exc).__name__}: {exc}"
        ).splitlines()[0]
        return
    backend = sel.backend
    report["selected"] = {
        "name": backend.name,
        "device_type": backend.device_type,
        "requested": sel.requested,
        "source": sel.source,
        "fell_back_from": sel.fell_back_from,
        "plugin": sel.entry.plugin,
    }
    devices = []
    for i in range(backend.device_count()):
        # "<type>:<index>" names the row even where the device object carries no index (cpu)
        devices.append({"index": i, "device": f"{backend.device_type}:{i}", "name": backend.device_name(i)})
    report["devices"] = devices
    report["capabilities"] = backend.capabilities().as_dict()
    report["amp_dtype"] = str(backend.default_amp_dtype).removeprefix("torch.")
    report["dist_backend"] = backend.dist_backend()
    rows = [(f"backend {backend.name!r} (env_info)", _rows(backend.env_info()))]
    rows += _plugin_rows(host, backend)
    report["environment"] = [[k, v] for _, got in rows if not isinstance(got, str) for k, v in got]
    report["environment_errors"] = [f"{who}: {got}" for who, got in rows if isinstance(got, str)]


def _distribution_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def system_versions() -> dict[str, str]:
    """What a bug report needs first, as ``accelerate env`` gives it: this package, Python, the
    platform and torch (each plugin's version is in the plugin rows)."""
    import platform

    return {
        "accel-abstraction": _distribution_version("accel-abstraction"),
        "Python": f"{platform.python_version()} ({platform.python_implementation()}, {sys.executable})",
        "platform": platform.platform(),
        "torch": _distribution_version("torch"),
    }


_MEMORY_SOURCES = {
    "allocator": "allocator (bytes held by the device's tensor allocator)",
    "process": "process (resident set size of this process and its peak; not only tensors)",
}


def _rows(value: Any) -> list[tuple[str, str]] | str:
    """``value`` as ``(key, value)`` string rows, or a string saying why it is not a list of pairs."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        return f"returned {type(value).__name__} {value!r}, not a list of (key, value) pairs"
    rows = []
    for row in value:
        if not isinstance(row, (list, tuple)) or len(row) != 2:
            return f"returned the row {row!r}, not a (key, value) pair"
        rows.append((str(row[0]), str(row[1])))
    return rows


def _plugin_rows(host: Any, backend: Any) -> list[tuple[str, list[tuple[str, str]] | str]]:
    """Each plugin's ``accel_env_info`` rows, called one by one so one broken plugin stays local."""
    out: list[tuple[str, list[tuple[str, str]] | str]] = []
    for call in host.call_each("accel_env_info", backend=backend):
        who = f"plugin {call.plugin!r} (accel_env_info)"
        if call.error is not None:  # diagnostics must not crash the diagnostics command
            out.append((who, f"raised {type(call.error).__name__}: {call.error}"))  # SystemExit: 3 too
        else:
            out.append((who, _rows(call.value)))
    return out


def _render(report: dict[str, Any], show_tracebacks: bool) -> None:
    from rich.markup import escape as e
    from rich.table import Table

    from . import exits

    # Every string that comes from a user, a configuration file or a plugin goes through
    # escape(): rich would otherwise read "[tool.accel]" in a message as markup and drop it.
    console = exits.console()
    system = Table(title="System", title_justify="left", show_header=False)
    system.add_column("key")
    system.add_column("value")
    for key, value in report["system"].items():
        system.add_row(e(key), e(value))
    console.print(system)

    plugins = Table(title="Plugins", title_justify="left")
    for col in ("plugin", "distribution", "version", "status", "backends / error"):
        plugins.add_column(col)
    for p in report["plugins"]:
        style = {"loaded": "green", "failed": "red", "skipped": "yellow"}[p["status"]]
        detail = ", ".join(p["backends"]) if p["status"] == "loaded" else p["error"]
        if p.get("problems"):
            detail = "; ".join([detail, *p["problems"]]) if detail else "; ".join(p["problems"])
        plugins.add_row(e(p["name"]), e(p["distribution"]), e(p["version"]), f"[{style}]{p['status']}[/]", e(detail))
    console.print(plugins)

    backends = Table(title="Backends", title_justify="left")
    for col in ("backend", "priority", "from", "available"):
        backends.add_column(col)
    selected = (report.get("selected") or {}).get("name")
    for b in report["backends"]:
        mark = " (selected)" if b["name"] == selected else ""
        status = "[green]yes[/]" if b["available"] else f"[red]no[/]: {e(b['reason'])}"
        backends.add_row(e(b["name"] + mark), str(b["priority"]), e(b["distribution"]), status)
    console.print(backends)

    if report.get("config_error"):
        console.print(f"[red]configuration error:[/] {e(report['config_error'])}")
    sel = report.get("selected")
    if sel is None:
        console.print(f"[red]no backend selected:[/] {e(report.get('selection_error', ''))}")
    else:
        fb = f", fell back from {sel['fell_back_from']!r}" if sel["fell_back_from"] else ""
        console.print(
            f"Selected: [bold]{e(sel['name'])}[/] "
            + e(f"(device type {sel['device_type']!r}; requested {sel['requested']!r} by {sel['source']}{fb})")
        )
        details = Table(title="Devices and capabilities", title_justify="left", show_header=False)
        details.add_column("key")
        details.add_column("value")
        for d in report["devices"]:
            details.add_row(e(d["device"]), e(d["name"]))
        caps = report["capabilities"]
        supported = [k for k, v in caps.items() if v is True] + [k for k, v in caps["extras"].items() if v]
        missing = [k for k, v in caps.items() if v is False] + [k for k, v in caps["extras"].items() if not v]
        details.add_row("supports", e(", ".join(supported) or "-"))
        details.add_row("unsupported", e(", ".join(missing) or "-"))
        details.add_row("compile backend", e(str(caps["compile_backend"])))
        if caps.get("memory_stats"):
            source = caps["memory_source"]
            details.add_row("memory statistics", e(_MEMORY_SOURCES.get(source, str(source))))
        details.add_row("amp dtype", e(report["amp_dtype"]))
        details.add_row("dist backend", e(report["dist_backend"]))
        for key, value in report["environment"]:
            details.add_row(e(key), e(value))
        console.print(details)
        for problem in report.get("environment_errors", []):
            console.print(f"[red]environment rows dropped:[/] {e(problem)}")
    for p in report["plugins"]:
        if p.get("output"):
            lines = p["output"].splitlines()
            shown = " | ".join(lines[:3]) + (f" | ... ({len(lines)} lines)" if len(lines) > 3 else "")
            console.print(f"[yellow]plugin {e(repr(p['name']))} printed on stdout (captured):[/] {e(shown)}")
    failed = [p for p in report["plugins"] if p["status"] == "failed"]
    for p in failed:
        if show_tracebacks:
            console.print(f"[red]Traceback of plugin {e(repr(p['name']))}:[/]\n{e(p['traceback'])}", highlight=False)
        else:
            console.print(
                f"[red]plugin {e(repr(p['name']))} failed[/]: {e(p['error'])} (accel info --tracebacks shows why)"
            )


def _freeze_torch_heap() -> None:
    """Keep torch's import-time objects out of this command's garbage collections.

    ``import torch`` leaves ~170,000 long-lived objects, and the first full collection after
    it scans them all: ~80 ms on a 2-core machine, more than everything else ``accel info``
    does. They are never garbage in a command that exits when it has printed, so they go to
    the permanent generation (:func:`gc.freeze`), as CPython suggests for such a heap. Only
    when ``accel`` is its own process: a library must not change its host's collector.
    """
    from .cli import owns_process

    if not owns_process():
        return
    try:
        import torch  # noqa: F401  # imported anyway by every backend the report probes
    except ImportError:
        return  # the report says what is missing
    gc.freeze()


def _run(args: argparse.Namespace) -> int:
    _freeze_torch_heap()
    report = collect()
    fmt = "json" if args.json else args.format
    if fmt == "json":
        json.dump(report, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    elif fmt == "md":
        from .info_markdown import render_markdown

        sys.stdout.write(render_markdown(report, args.tracebacks))
    else:
        _render(report, args.tracebacks)
    return 0 if report.get("selected") else 1


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "info",
        help="show plugins, backends, the selected backend and why",
        description="Show the system, the plugins (loaded or why not), every backend (available or why not), "
        "the selected backend and which configuration source chose it, its devices and capabilities. "
        "Exit 0 when a backend is selected, 1 when none can be.",
    )
    parser.add_argument(
        "--format", choices=("text", "json", "md"), default="text",
        help="text: tables (default); json: machine-readable; md: Markdown to paste into an issue",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    parser.add_argument(
        "--tracebacks", "--traceback", dest="tracebacks", action="store_true",
        help="print the traceback of each failed plugin",
    )  # fmt: skip
    parser.set_defaults(func=_run)
