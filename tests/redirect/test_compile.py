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


AFTER_UNDO = """
import torch, accel_abstraction as accel
accel.use("cpu")
def uses_cuda(x):
    return x + torch.ones(8, device="cuda")
def plain(x):
    return x + torch.ones(8)
x = torch.zeros(8)
with accel.redirect_cuda():  # the first compile of the process happens under the redirect
    assert torch.compile(uses_cuda, backend="eager", fullgraph=True)(x).device.type == "cpu"
torch._dynamo.reset()
assert torch.equal(torch.compile(plain, backend="aot_eager", fullgraph=True)(x), torch.ones(8))
with torch.device("meta"):  # torch's own device context still knows the original factories
    assert torch.zeros(2).device.type == "meta"
print("ok")
"""


def test_torch_compile_and_device_context_work_after_undo() -> None:
    from .conftest import run

    proc = run(["-c", AFTER_UNDO], {"ACCEL_BACKEND": "cpu"})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def scripted(x: torch.Tensor) -> torch.Tensor:
    return x + torch.zeros(2)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_torch_jit_script_is_untouched_by_the_redirect() -> None:
    with redirect_cuda():
        assert torch.equal(torch.jit.script(scripted)(torch.ones(2)), torch.ones(2))
    assert torch.equal(torch.jit.script(scripted)(torch.ones(2)), torch.ones(2))
