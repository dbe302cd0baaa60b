"""Writing scan results: text lines, JSON, SARIF 2.1.0."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .findings import FileResult, Finding
from .rules import Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def format_finding(finding: Finding) -> str:
    """``file:line:col CODE message (suggested rewrite)``."""
    text = f"{finding.path}:{finding.line}:{finding.col} {finding.code} {finding.message}"
    if finding.suggestion:
        text += f" ({finding.suggestion})"
    return text


def all_findings(results: Sequence[FileResult]) -> list[Finding]:
    return [f for r in results for f in r.findings]


def summary(results: Sequence[FileResult]) -> dict[str, int]:
    findings = all_findings(results)
    return {
        "files": len(results),
        "files_skipped": sum(1 for r in results if r.skipped),
        "files_with_findings": sum(1 for r in results if r.findings),
        "findings": len(findings),
        "portable": sum(1 for f in findings if f.portable),
        "manual": sum(1 for f in findings if not f.portable),
        "errors": sum(1 for r in results if r.error),
    }


def to_text(results: Sequence[FileResult]) -> str:
    return "".join(format_finding(f) + "\n" for f in all_findings(results))


def to_json(results: Sequence[FileResult]) -> str:
    payload = {
        "version": 1,
        "findings": [f.to_dict() for f in all_findings(results)],
        "errors": [r.error for r in results if r.error],
        "summary": summary(results),
    }
    return json.dumps(payload, indent=2) + "\n"


def _uri(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(Path.cwd())
        except ValueError:
            return p.as_uri()
    return p.as_posix()


def to_sarif(results: Sequence[FileResult], rules: Sequence[Rule], version: str = "0.1.0") -> str:
    """A SARIF 2.1.0 log with one run; every known rule is listed in the driver."""
    index = {rule.code: i for i, rule in enumerate(rules)}
    driver_rules: list[dict[str, Any]] = []
    for rule in rules:
        entry: dict[str, Any] = {
            "id": rule.code,
            "name": rule.message,
            "shortDescription": {"text": rule.message},
            "properties": {"category": rule.category, "portable": rule.portable},
        }
        if rule.suggestion:
            entry["help"] = {"text": f"Portable rewrite: {rule.suggestion}"}
        driver_rules.append(entry)
    sarif_results: list[dict[str, Any]] = []
    for finding in all_findings(results):
        message = finding.message + (f" ({finding.suggestion})" if finding.suggestion else "")
        result: dict[str, Any] = {
            "ruleId": finding.code,
            "level": "warning",
            "message": {"text": message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(finding.path)},
                        "region": {
                            "startLine": finding.line,
                            "startColumn": finding.col,
                            "endLine": finding.end_line,
                            "endColumn": finding.end_col,
                        },
                    }
                }
            ],
        }
        if finding.code in index:
            result["ruleIndex"] = index[finding.code]
        sarif_results.append(result)
    notifications = [
        {"level": "error", "message": {"text": r.error}} for r in results if r.error
    ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "accel-scan",
                        "version": version,
                        "rules": driver_rules,
                    }
                },
                "invocations": [
                    {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}
                ],
                "results": sarif_results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
