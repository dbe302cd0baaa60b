"""``accel info --format md``: the report as Markdown, to paste into an issue (as ``accelerate env``).

The same fields as the text tables (:func:`accel_abstraction.info.collect`), as bullet lists
and pipe tables; ``|`` and line breaks in a cell are escaped so each row stays one row.
"""

from __future__ import annotations

from typing import Any

__all__ = ["render_markdown"]


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(report: dict[str, Any], show_tracebacks: bool = False) -> str:
    """The ``accel info`` report as Markdown."""
    out = ["## accel info", "", "### System", ""]
    out += [f"- {key}: `{_cell(value)}`" for key, value in report["system"].items()]
    out += ["", "### Plugins", ""]
    rows = []
    for p in report["plugins"]:
        detail = ", ".join(p["backends"]) if p["status"] == "loaded" else p["error"]
        if p.get("problems"):
            detail = "; ".join([detail, *p["problems"]]) if detail else "; ".join(p["problems"])
        rows.append([p["name"], p["distribution"], p["version"], p["status"], detail])
    out += _table(["plugin", "distribution", "version", "status", "backends / error"], rows)
    out += ["", "### Backends", ""]
    selected = (report.get("selected") or {}).get("name")
    rows = [
        [b["name"] + (" (selected)" if b["name"] == selected else ""), b["priority"], b["distribution"],
         "yes" if b["available"] else f"no: {b['reason']}"]
        for b in report["backends"]
    ]  # fmt: skip
    out += _table(["backend", "priority", "from", "available"], rows)
    out.append("")
    if report.get("config_error"):
        out += [f"**configuration error:** {_cell(report['config_error'])}", ""]
    sel = report.get("selected")
    if sel is None:
        out += [f"**no backend selected:** {_cell(report.get('selection_error', ''))}", ""]
    else:
        fb = f", fell back from {sel['fell_back_from']!r}" if sel["fell_back_from"] else ""
        out += [
            f"**Selected:** `{sel['name']}` (device type {sel['device_type']!r}; requested "
            f"{sel['requested']!r} by {_cell(sel['source'])}{fb})",
            "",
            "### Devices and capabilities",
            "",
        ]
        out += [f"- {_cell(d['device'])}: {_cell(d['name'])}" for d in report["devices"]]
        caps = report["capabilities"]
        supported = [k for k, v in caps.items() if v is True] + [k for k, v in caps["extras"].items() if v]
        missing = [k for k, v in caps.items() if v is False] + [k for k, v in caps["extras"].items() if not v]
        out += [
            f"- supports: {', '.join(supported) or '-'}",
            f"- unsupported: {', '.join(missing) or '-'}",
            f"- compile backend: {caps['compile_backend']}",
            f"- amp dtype: {report['amp_dtype']}",
            f"- dist backend: {report['dist_backend']}",
        ]
        out += [f"- {_cell(k)}: {_cell(v)}" for k, v in report["environment"]]
        out += [f"- environment rows dropped: {_cell(problem)}" for problem in report.get("environment_errors", [])]
        out.append("")
    for p in report["plugins"]:
        if p["status"] != "failed":
            continue
        if show_tracebacks and p.get("traceback"):
            out += [f"<details><summary>Traceback of plugin {p['name']!r}</summary>", "", "```", p["traceback"].rstrip(), "```", "", "</details>", ""]
        else:
            out += [f"- plugin {p['name']!r} failed: {_cell(p['error'])} (accel info --tracebacks shows why)"]
    return "\n".join(out).rstrip("\n") + "\n"
