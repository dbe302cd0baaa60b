"""How the distributions install: what each declares, what ships in the wheel, what runs without torch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]


def _project(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _requirement_names(deps: list[str]) -> set[str]:
    names = set()
    for dep in deps:
        name = dep.split(";")[0]
        for sep in "<>=!~[ ":
            name = name.split(sep)[0]
        names.add(name.strip().lower())
    return names


def test_every_subpackage_is_listed_for_the_wheel() -> None:
    listed = set(_project(REPO / "pyproject.toml")["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(init.parent.relative_to(REPO).parts) for init in (REPO / "accel_abstraction").rglob("__init__.py")
    }
    assert on_disk <= listed, f"add to [tool.setuptools] packages: {sorted(on_disk - listed)}"
    assert listed - on_disk == {"accel_abstraction.patching.series_data"}


def test_the_core_installs_without_torch_or_libcst_and_plugins_never_cap_torch() -> None:
    core = _project(REPO / "pyproject.toml")["project"]
    assert not {"torch", "libcst"} & _requirement_names(core["dependencies"])
    assert "libcst" in _requirement_names(core["optional-dependencies"]["port"])
    for plugin in ("cpu", "cuda", "neuron"):
        deps = _project(REPO / "plugins" / plugin / "pyproject.toml")["project"]["dependencies"]
        torch_req = [d for d in deps if _requirement_names([d]) == {"torch"}]
        # a lower bound only: installing a plugin must never replace a newer torch the user has
        assert torch_req == ["torch>=2.13"], (plugin, torch_req)


def test_backend_extras_bring_their_plugin_and_never_torch() -> None:
    extras = _project(REPO / "pyproject.toml")["project"]["optional-dependencies"]
    for backend in ("cpu", "cuda", "neuron"):
        names = _requirement_names(extras[backend])
        assert f"accel-{backend}" in names and "torch" not in names, (backend, names)
        plugin = _project(REPO / "plugins" / backend / "pyproject.toml")["project"]
        version = plugin["version"]
        pinned = next(d for d in extras[backend] if _requirement_names([d]) == {f"accel-{backend}"})
        assert pinned == f"accel-{backend}>=0.1,<0.2" and version.startswith("0.1."), (pinned, version)
    assert "accel-cpu" in _requirement_names(extras["neuron"])  # the reference accel test compares with


# A Python that cannot import torch or libcst, as in the pre-commit hook's environment.
_WITHOUT = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "libcst"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Block())
from accel_abstraction.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _accel_without_torch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def test_scan_runs_without_torch_and_the_runtime_commands_say_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\nmodel = model.cuda()\ntorch.cuda.synchronize()\n")
    scan = _accel_without_torch("scan", "--check", "train.py", cwd=tmp_path)
    assert scan.returncode == 1, scan.stderr  # findings fail, as in every linter
    assert "train.py:2" in scan.stdout and "train.py:3" in scan.stdout
    info = _accel_without_torch("info", cwd=tmp_path)
    assert info.returncode == 2
    assert info.stderr.startswith("accel: error: torch is not installed")
    assert "pip install accel-cpu" in info.stderr and "Traceback" not in info.stderr
    port = _accel_without_torch("port", "train.py", cwd=tmp_path)
    assert port.returncode == 2
    assert "libcst is not installed" in port.stderr and "accel-abstraction[port]" in port.stderr


@pytest.mark.slow
def test_a_wheel_installed_elsewhere_carries_the_patch_series(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the series is listed and checked against the installed torch")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(REPO), "-w", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("accel_abstraction-*.whl")
    # every release's series, whole (pyproject's package-data globs must keep matching patches/)
    prefix = "accel_abstraction/patching/series_data/"
    with zipfile.ZipFile(wheel) as archive:
        shipped = {n[len(prefix) :] for n in archive.namelist() if n.startswith(prefix + "pytorch/")}
    in_checkout = {p.relative_to(REPO / "patches").as_posix() for p in (REPO / "patches" / "pytorch").glob("*/*")}
    assert shipped == in_checkout and len({p.split("/")[1] for p in shipped}) >= 3
    with zipfile.ZipFile(wheel) as archive:  # accel test's script is in the wheel: no checkout needed
        assert "accel_abstraction/selftest/tiny_train.py" in archive.namelist()
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    env["PYTHONPATH"] = str(target)  # ahead of the editable checkout
    code = textwrap.dedent(
        """
        import sys
        from accel_abstraction.cli import main
        sys.exit(main(sys.argv[1:]))
        """
    )
    for action in ("list", "check"):
        result = subprocess.run(
            [sys.executable, "-c", code, "patches", action],
            capture_output=True, text=True, cwd="/", env=env, timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert str(target / "accel_abstraction" / "patching" / "series_data" / "pytorch") in result.stdout
    assert "0 fail" in result.stdout
