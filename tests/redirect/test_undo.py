"""Undo restores every patched attribute exactly; nesting, re-entry and threads are safe."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel  # imported here: its redirect goes in at once
from torch.nn.parallel import DistributedDataParallel
from torch.utils._device import DeviceContext
from torch.utils.data import DataLoader

import accel_abstraction as accel
from accel_abstraction.errors import AccelError
from accel_abstraction.redirect import redirect_cuda
from accel_abstraction.redirect.context import active_redirects

OWNERS = [
    torch, torch.cuda, torch.cuda.amp, torch.amp, torch.Tensor, torch.nn.Module, dist,
    type(torch.backends.cudnn), DeviceContext, DistributedDataParallel,
    type(torch.backends.cuda.matmul), torch.backends.cuda, torch.cuda.nvtx, DataLoader,
    torch.cuda.random, torch.nn.DataParallel, FullyShardedDataParallel,
]  # fmt: skip


def snapshot() -> list[dict[str, object]]:
    return [dict(vars(owner)) for owner in OWNERS]


def assert_restored(before: list[dict[str, object]]) -> None:
    after = snapshot()
    for owner, old, new in zip(OWNERS, before, after, strict=True):
        assert old.keys() == new.keys(), f"{owner}: attributes added or removed: {old.keys() ^ new.keys()}"
        changed = [name for name in old if old[name] is not new[name]]
        assert not changed, f"{owner}: not the original object after undo: {changed}"


def test_undo_restores_every_patched_attribute_identically() -> None:
    before = snapshot()
    originals = {name: getattr(torch.Tensor, name) for name in ("cuda", "to")}
    r = redirect_cuda()
    installed = active_redirects()
    assert len(installed) > 80
    for red in installed:
        assert any(red.target is owner for owner in OWNERS), red
        assert vars(red.target)[red.name] is red.replacement
    r.undo()
    assert active_redirects() == []
    assert_restored(before)
    # attributes inherited from torch._C.TensorBase are inherited again, not copied down
    assert "cuda" not in vars(torch.Tensor) and "to" not in vars(torch.Tensor)
    assert all(getattr(torch.Tensor, n) is f for n, f in originals.items())
    assert torch.cuda.is_available() is False  # the real answer on this CPU build


def test_nesting_and_reentry() -> None:
    before = snapshot()
    outer = redirect_cuda()
    with redirect_cuda() as inner:
        assert inner.active and torch.cuda.is_available()
    assert torch.cuda.is_available(), "leaving the inner redirect must keep the outer one"
    outer.undo()
    outer.undo()  # idempotent
    assert_restored(before)
    with outer:  # re-entering an undone object redirects again
        assert torch.cuda.device_count() == 1
    assert_restored(before)


def test_nested_redirect_must_match_the_active_one() -> None:
    with redirect_cuda():
        with pytest.raises(AccelError, match="already active"):
            redirect_cuda(allow_missing=True)
    assert active_redirects() == []


def test_concurrent_threads_enter_and_leave_safely() -> None:
    before = snapshot()
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def worker() -> None:
        try:
            start.wait()
            for _ in range(40):
                with redirect_cuda():
                    t = torch.zeros(2, device="cuda")  # served inside, whichever thread installed
                    assert t.device.type == "cpu"
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert_restored(before)


def test_public_api_exposes_redirect_cuda() -> None:
    assert accel.redirect_cuda is redirect_cuda
