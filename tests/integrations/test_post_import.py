"""when_imported: a callback runs on the module right after its import, once; at once when already imported."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from accel_abstraction.integrations.post_import import when_imported


def test_callback_sees_the_executed_module_before_the_importer(fresh_module: str) -> None:
    seen: list[int] = []

    def patch(module: ModuleType) -> None:
        seen.append(module.VALUE)
        module.VALUE = 2

    when_imported(fresh_module, patch)
    assert fresh_module not in sys.modules and seen == []
    module = __import__(fresh_module)
    assert seen == [1] and module.VALUE == 2
    del sys.modules[fresh_module]
    assert __import__(fresh_module).VALUE == 1  # once: a second import is not patched again


def test_already_imported_module_is_called_back_at_once(fresh_module: str) -> None:
    module = __import__(fresh_module)
    when_imported(fresh_module, lambda m: setattr(m, "VALUE", 3))
    assert module.VALUE == 3


def test_a_module_awaited_from_inside_its_own_import_is_called_back_once_it_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``accelerate.accelerator`` imports torch, whose autoload awaits ``accelerate.accelerator``:
    the callback must see the finished module (it ran on the half-made one: AttributeError)."""
    stem = f"accel_post_import_mid_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{stem}_hook.py").write_text(
        "from accel_abstraction.integrations.post_import import when_imported\n"
        f"SEEN = []\nwhen_imported({stem!r}, lambda m: SEEN.append(m.VALUE))\n"
    )
    (tmp_path / f"{stem}.py").write_text(f"import {stem}_hook\nVALUE = 1\n")
    (tmp_path / f"{stem}_next.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        __import__(stem)
        hook = sys.modules[f"{stem}_hook"]
        assert hook.SEEN == []  # not on the half-made module
        __import__(f"{stem}_next")  # the next import finds it whole
        assert hook.SEEN == [1]
        __import__("json.tool")
        assert hook.SEEN == [1]  # once
    finally:
        for suffix in ("", "_hook", "_next"):
            sys.modules.pop(f"{stem}{suffix}", None)
