"""torch.compile works under the redirect (eager and aot_eager backends, no graph break)."""

from __future__ import annotations

import pytest
import torch

from accel_abstraction.redirect import redirect_cuda


def step(x: torch.Tensor) -> torch.Tensor:
    with torch.autocast("cuda"):
        y = x.to("cuda") @ torch.ones(8, 8, device="cuda")
    return y.float().relu().sum() + torch.zeros(1, device=torch.device("cuda", 0))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiled_function_matches_eager_under_redirect(backend: str) -> None:
    torch._dynamo.reset()
    x = torch.randn(4, 8)
    with redirect_cuda():
        expected = step(x)
        compiled = torch.compile(step, backend=backend, fullgraph=True)
        first, second = compiled(x), compiled(x)
    torch._dynamo.reset()
    assert expected.device.type == "cpu"
    assert torch.equal(first, expected) and torch.equal(second, expected)
