"""nn.DataParallel under the redirect: DataParallel's split and join, served on one device."""

from __future__ import annotations

from collections import namedtuple

import pytest
import torch

import accel_abstraction as accel
from accel_abstraction.redirect.data_parallel import gather, scatter

Pair = namedtuple("Pair", "a b")


def test_scatter_splits_tensors_and_repeats_everything_else() -> None:
    x = torch.arange(10.0).reshape(5, 2)
    pieces = scatter({"x": x, "n": 3, "t": (x, "s"), "p": Pair(x, x)}, 2)
    assert len(pieces) == 2
    assert torch.equal(pieces[0]["x"], x[:3]) and torch.equal(pieces[1]["x"], x[3:])
    assert [p["n"] for p in pieces] == [3, 3] and pieces[1]["t"][1] == "s"
    assert isinstance(pieces[0]["p"], Pair) and torch.equal(pieces[1]["p"].b, x[3:])


def test_gather_joins_pieces_and_stacks_scalars() -> None:
    x = torch.arange(10.0).reshape(5, 2)
    pieces = scatter(x, 2)
    assert torch.equal(gather([{"y": p, "none": None} for p in pieces])["y"], x)
    with pytest.warns(UserWarning, match="scalars"):
        assert torch.equal(gather([torch.tensor(1.0), torch.tensor(2.0)]), torch.tensor([1.0, 2.0]))


def test_data_parallel_runs_its_replicas_on_the_current_device() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    x = torch.randn(6, 3)
    original = (torch.nn.DataParallel.__init__, torch.nn.DataParallel.forward)
    with accel.redirect_cuda() as r:
        dp = torch.nn.DataParallel(model, device_ids=[0, 1])
        out = dp(x)
        out.sum().backward()
    assert torch.equal(out, model(x))  # rows are independent: the split changes nothing
    assert dp.module is model and model.weight.grad is not None
    sites = {(s.api, s.status) for s in r.sites()}
    assert ("torch.nn.DataParallel", "one device") in sites
    assert (torch.nn.DataParallel.__init__, torch.nn.DataParallel.forward) == original  # undone
