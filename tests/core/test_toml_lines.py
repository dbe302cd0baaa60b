"""Errors about pyproject keys name their line however TOML writes the key (dotted, inline, quoted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel_abstraction.errors import ConfigError
from accel_abstraction.settings import AccelSettings
from accel_abstraction.toml_lines import key_line

TEXT = """\
[project]
name = "x"                       # 2
[tool]
accel.backned = "cpu"            # 4: a dotted key under [tool]
other = { accel = 1 }            # 5
[tool.accel]
neuron = { emulate = true, devices = [1, {a = 2}], deep = { k = "}" } }   # 7
"scan" . ignore = ["A"]          # 8: quoted, spaces around the dot
doc = \"\"\"
fake = 1
\"\"\"
[ tool . "accel" . distributed ]  # 12
timeout = 5                      # 13
[[tool.accel.list]]
fake = 2
"""


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (("tool", "accel", "backned"), 4),
        (("tool", "other", "accel"), 5),
        (("tool", "accel", "neuron", "emulate"), 7),
        (("tool", "accel", "neuron", "deep", "k"), 7),
        (("tool", "accel", "scan", "ignore"), 8),
        (("tool", "accel", "distributed"), 12),
        (("tool", "accel", "distributed", "timeout"), 13),
        (("tool", "accel", "fake"), None),  # inside a multi-line string and an array of tables: no key
        (("project", "name"), 2),
    ],
)
def test_key_line(path: tuple[str, ...], line: int | None) -> None:
    assert key_line(TEXT, path) == line


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[project]\nname = "x"\n\n[tool]\naccel.backned = "cpu"\n', 5),
        ('[project]\nname = "x"\n[tool]\naccel = { backned = "cpu" }\n', 4),
        ('tool.accel.backned = "cpu"\n', 1),
    ],
    ids=["dotted", "inline", "top-level-dotted"],
)
def test_unknown_key_error_names_its_line(tmp_path: Path, text: str, line: int) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(text)
    with pytest.raises(ConfigError) as info:
        AccelSettings.load(pyproject=pyproject)
    assert str(info.value).startswith(f"{pyproject}:{line}: unknown key 'backned' in [tool.accel]")


def test_a_bad_value_under_a_dotted_key_names_its_line(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool]\naccel.amp_dtype = "fp64"\n')
    with pytest.raises(ConfigError) as info:
        AccelSettings.load(pyproject=pyproject)
    assert str(info.value).startswith(f"{pyproject}:2 [tool.accel] amp_dtype: invalid value 'fp64'")
