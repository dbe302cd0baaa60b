"""``accel info``: plugins, backends, the selection and why, devices and capabilities."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .errors import AccelError

__all__ = ["add_parser", "collect"]


def collect() -> dict[str, Any]:
    """Everything ``accel info`` shows, as JSON-ready data. Never raises for a selection error."""
    from . import runtime
    from .plugins import get_host

    host = get_host()
    report: dict[str, Any] = {
        "plugins": [
            {
                "name": r.name,
                "distribution": r.distribution,
                "version": r.version,
                "status": r.status,
                "error": r.error,
                "traceback": r.traceback,
                "backends": r.backends,
            }
            for r in host.records.values()
        ],
        "backends": [],
    }
    from .sections import CORE
    from .selection import build_backend

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
            avail = build_backend(entry, settings).availability()
            row.update(available=avail.available, reason=avail.reason, hint=avail.hint)
        except AccelError as exc:
            row.update(available=False, reason=str(exc).splitlines()[0], hint="")
        report["backends"].append(row)
    try:
        sel = runtime.selection()
    except AccelError as exc:
        report["selected"] = None
        report["selection_error"] = str(exc).splitlines()[0]
        return report
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
        devices.append({"index": i, "device": str(backend.device(i)), "name": backend.device_name(i)})
    report["devices"] = devices
    report["capabilities"] = backend.capabilities().as_dict()
    report["amp_dtype"] = str(backend.default_amp_dtype).removeprefix("torch.")
    report["dist_backend"] = backend.dist_backend()
    rows = list(backend.env_info())
    for extra in host.pm.hook.accel_env_info(backend=backend):
        rows.extend(extra or [])
    report["environment"] = [list(r) for r in rows]
    return report


def _render(report: dict[str, Any], show_tracebacks: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    plugins = Table(title="Plugins", title_justify="left")
    for col in ("plugin", "distribution", "version", "status", "backends / error"):
        plugins.add_column(col)
    for p in report["plugins"]:
        style = {"loaded": "green", "failed": "red", "skipped": "yellow"}[p["status"]]
        plugins.add_row(
            p["name"], p["distribution"], p["version"], f"[{style}]{p['status']}[/]",
            ", ".join(p["backends"]) if p["status"] == "loaded" else p["error"],
        )
    console.print(plugins)

    backends = Table(title="Backends", title_justify="left")
    for col in ("backend", "priority", "from", "available"):
        backends.add_column(col)
    selected = (report.get("selected") or {}).get("name")
    for b in report["backends"]:
        mark = " (selected)" if b["name"] == selected else ""
        status = "[green]yes[/]" if b["available"] else f"[red]no[/]: {b['reason']}"
        backends.add_row(b["name"] + mark, str(b["priority"]), b["distribution"], status)
    console.print(backends)

    if report.get("config_error"):
        console.print(f"[red]configuration error:[/] {report['config_error']}")
    sel = report.get("selected")
    if sel is None:
        console.print(f"[red]no backend selected:[/] {report.get('selection_error', '')}")
    else:
        fb = f", fell back from {sel['fell_back_from']!r}" if sel["fell_back_from"] else ""
        console.print(
            f"Selected: [bold]{sel['name']}[/] (device type {sel['device_type']!r}; "
            f"requested {sel['requested']!r} by {sel['source']}{fb})"
        )
        details = Table(title="Devices and capabilities", title_justify="left", show_header=False)
        details.add_column("key")
        details.add_column("value")
        for d in report["devices"]:
            details.add_row(d["device"], d["name"])
        caps = report["capabilities"]
        supported = [k for k, v in caps.items() if v is True] + [k for k, v in caps["extras"].items() if v]
        missing = [k for k, v in caps.items() if v is False] + [k for k, v in caps["extras"].items() if not v]
        details.add_row("supports", ", ".join(supported) or "-")
        details.add_row("unsupported", ", ".join(missing) or "-")
        details.add_row("compile backend", str(caps["compile_backend"]))
        details.add_row("amp dtype", report["amp_dtype"])
        details.add_row("dist backend", report["dist_backend"])
        for key, value in report["environment"]:
            details.add_row(key, value)
        console.print(details)
    failed = [p for p in report["plugins"] if p["status"] == "failed"]
    for p in failed:
        if show_tracebacks:
            console.print(f"[red]Traceback of plugin {p['name']!r}:[/]\n{p['traceback']}", markup=True, highlight=False)
        else:
            console.print(f"[red]plugin {p['name']!r} failed[/]: {p['error']} (accel info --tracebacks shows why)")


def _run(args: argparse.Namespace) -> int:
    report = collect()
    if args.json:
        json.dump(report, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        _render(report, args.tracebacks)
    return 0 if report.get("selected") else 1


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("info", help="show plugins, backends, the selected backend and why")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--tracebacks", action="store_true", help="print the traceback of each failed plugin")
    parser.set_defaults(func=_run)
