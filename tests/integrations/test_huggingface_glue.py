"""expose/conceal: the variable accelerate reads, and transformers' bf16 check, follow the exposed backend."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from accel_abstraction.integrations import huggingface


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
