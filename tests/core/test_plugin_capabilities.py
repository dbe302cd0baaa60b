"""Plugin capability groups (issue 38): a command that needs no backend never imports a
plugin's backends module; an undeclared (legacy) plugin is still loaded by every command."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import run_cli


def _dist(root: Path, name: str, groups: dict[str, str], modules: dict[str, str]) -> None:
    for module, body in modules.items():
        (root / f"{module}.py").write_text(body)
    info = root / f"fake_{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fake-{name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(f"[{g}]\n{name} = {m}\n" for g, m in groups.items()))


def test_scan_never_imports_a_backends_module_and_runs_the_tools_module(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _dist(
        site,
        "hostile",
        {"accel_abstraction.backends": "hostile_backends", "accel_abstraction.tools": "hostile_tools"},
        {
            "hostile_backends": "import sys, time\nprint('chatty')\ntime.sleep(60)\nsys.exit(3)\n",
            "hostile_tools": "print('tools chatty')\n",
        },
    )
    (tmp_path / "train.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    scan = run_cli("scan", "--format", "json", str(tmp_path / "train.py"), pythonpath=site, cwd=tmp_path)
    assert scan.returncode in (0, 1), scan.stderr
    report = json.loads(scan.stdout)  # the tools module's print did not reach it
    assert "chatty" not in scan.stdout and "hostile" not in scan.stderr
    assert report
    info = run_cli("info", "--json", pythonpath=site, cwd=tmp_path, env={"ACCEL_PLUGIN_IMPORT_TIMEOUT": "2"})
    plugins = {p["name"]: p for p in json.loads(info.stdout)["plugins"]}
    assert plugins["hostile"]["status"] == "failed" and "hostile_backends" in plugins["hostile"]["error"]


def test_an_undeclared_plugin_is_loaded_by_scan_as_before(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _dist(site, "legacy", {"accel_abstraction": "legacy_plugin"}, {"legacy_plugin": "import sys\nsys.exit(4)\n"})
    (tmp_path / "a.py").write_text("x = 1\n")
    scan = run_cli("scan", "--format", "json", str(tmp_path / "a.py"), pythonpath=site, cwd=tmp_path)
    assert scan.returncode == 0, scan.stderr
    json.loads(scan.stdout)
    assert "'legacy' (fake-legacy) was not loaded: import failed: SystemExit: 4" in scan.stderr
