"""expose/conceal: the variable accelerate reads, and transformers' bf16 check, follow the exposed backend."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from accel_abstraction.integrations import huggingface
from accel_abstraction.safe_io import TEMP_SUFFIX


class _Backend:
    device_type = "mydev"

    def current_device(self) -> int:
        return 1

    def is_bf16_supported(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(huggingface.DEVICE_VAR, raising=False)
    yield
    huggingface.conceal()


def test_expose_sets_the_device_and_conceal_removes_only_what_it_set() -> None:
    huggingface.expose(_Backend())  # type: ignore[arg-type]
    assert os.environ[huggingface.DEVICE_VAR] == "mydev:1"
    huggingface.conceal()
    assert huggingface.DEVICE_VAR not in os.environ and huggingface.exposed() is None


def test_a_device_the_user_chose_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(huggingface.DEVICE_VAR, "cpu")
    huggingface.expose(_Backend())  # type: ignore[arg-type]
    assert os.environ[huggingface.DEVICE_VAR] == "cpu"
    huggingface.conceal()
    assert os.environ[huggingface.DEVICE_VAR] == "cpu"


def test_bf16_check_answers_for_the_exposed_backend_only() -> None:
    training_args = pytest.importorskip("transformers.training_args", reason="transformers is not installed")
    huggingface.expose(_Backend())  # type: ignore[arg-type]
    assert training_args.is_torch_bf16_gpu_available() is True
    huggingface.conceal()
    assert training_args.is_torch_bf16_gpu_available() is False  # this CPU-only torch has no bf16 GPU


class _RngBackend(_Backend):
    """Two devices whose generators are CPU generators (state: a ByteTensor, as torch's)."""

    def __init__(self) -> None:
        import torch

        self.generators = [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)]

    def get_rng_state(self, device: int | None = None) -> object:
        return self.generators[self.current_device() if device is None else device].get_state()

    def set_rng_state(self, state: object, device: int | None = None) -> None:
        self.generators[self.current_device() if device is None else device].set_state(state)  # type: ignore[arg-type]

    def get_rng_state_all(self) -> list[object]:
        return [g.get_state() for g in self.generators]

    def set_rng_state_all(self, states: list[object]) -> None:
        for g, s in zip(self.generators, states, strict=True):
            g.set_state(s)  # type: ignore[arg-type]


def _fake_trainer_module(mode: str, world_size: int, rank: int) -> object:
    """A module with a ``Trainer`` whose RNG methods only write / read a marker, as transformers' do for CPU."""
    import types

    class Args:
        parallel_mode = types.SimpleNamespace(value=mode)
        process_index = rank

    Args.world_size = world_size  # type: ignore[attr-defined]

    class Trainer:
        args = Args()
        loaded: str | None = None

        def _save_rng_state(self, output_dir: str) -> None:
            (Path(output_dir) / "rng_state.pth").write_text("cpu")

        def _load_rng_state(self, checkpoint: str | None) -> None:
            self.loaded = checkpoint

    return types.SimpleNamespace(Trainer=Trainer)


@pytest.mark.parametrize(("mode", "world_size", "name"), [
    ("not_parallel", 1, "rng_state_mydev.pth"),
    ("distributed", 2, "rng_state_mydev_1.pth"),
])  # fmt: skip
def test_trainer_checkpoints_carry_the_device_rng_state(tmp_path: Path, mode: str, world_size: int, name: str) -> None:
    import torch

    backend = _RngBackend()
    huggingface.expose(backend)  # type: ignore[arg-type]
    module = _fake_trainer_module(mode, world_size, rank=1)
    huggingface._carry_device_rng(module)  # type: ignore[arg-type]
    huggingface._carry_device_rng(module)  # type: ignore[arg-type]  (a second call does not wrap twice)
    trainer = module.Trainer()  # type: ignore[attr-defined]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, timeout=60)
    (tmp_path / f".{name}.{dead.stdout.strip()}.abc123{TEMP_SUFFIX}").write_bytes(b"half")  # a save that was killed
    trainer._save_rng_state(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["rng_state.pth", name])  # whole file, temp gone
    expected = [torch.rand(3, generator=g) for g in backend.generators]  # what the saved states draw next
    trainer._load_rng_state(str(tmp_path))
    drawn = [torch.rand(3, generator=g) for g in backend.generators]
    assert trainer.loaded == str(tmp_path)  # transformers' own restore still ran
    # the current device (1) always; every device when distributed (device 0 too)
    assert torch.equal(drawn[1], expected[1])
    assert torch.equal(drawn[0], expected[0]) == (mode == "distributed")


def test_trainer_rng_glue_is_off_when_concealed(tmp_path: Path) -> None:
    huggingface.expose(_RngBackend())  # type: ignore[arg-type]
    module = _fake_trainer_module("not_parallel", 1, rank=0)
    huggingface._carry_device_rng(module)  # type: ignore[arg-type]
    huggingface.conceal()
    module.Trainer()._save_rng_state(str(tmp_path))  # type: ignore[attr-defined]
    assert [p.name for p in tmp_path.iterdir()] == ["rng_state.pth"]


def test_a_launched_worker_takes_its_local_rank_device_over_the_launchers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher's process set the variable (inherited with its mark); a worker with LOCAL_RANK=1 of a
    backend with 2 devices uses device 1. A value the user set (no matching mark) is still kept."""
    backend = _RngBackend()  # current device 1, two devices
    monkeypatch.setattr(backend, "current_device", lambda: 0)
    monkeypatch.setattr(backend, "device_count", lambda: 2, raising=False)
    monkeypatch.setenv(huggingface.DEVICE_VAR, "mydev:0")
    monkeypatch.setenv(huggingface._SET_MARK, "mydev:0")
    monkeypatch.setenv("LOCAL_RANK", "3")
    huggingface.expose(backend)  # type: ignore[arg-type]
    assert os.environ[huggingface.DEVICE_VAR] == "mydev:1"
    huggingface.conceal()
    assert huggingface.DEVICE_VAR not in os.environ and huggingface._SET_MARK not in os.environ
    monkeypatch.setenv(huggingface.DEVICE_VAR, "mydev:0")  # the user's, no mark
    huggingface.expose(backend)  # type: ignore[arg-type]
    assert os.environ[huggingface.DEVICE_VAR] == "mydev:0"


def test_accelerates_own_check_for_the_device_type_answers_while_exposed() -> None:
    import types

    def is_mydev_available(check_device: bool = False) -> bool:
        return False

    module = types.SimpleNamespace(is_mydev_available=is_mydev_available, is_other_available=lambda: False)
    huggingface.expose(_Backend())  # type: ignore[arg-type]
    huggingface._widen_accelerate_check(module)  # type: ignore[arg-type]
    assert module.is_mydev_available(check_device=True) is True
    assert module.is_other_available() is False
    huggingface.conceal()
    assert module.is_mydev_available() is False
