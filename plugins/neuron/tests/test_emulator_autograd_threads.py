"""A backward that ran before install() must not break neuron backward (autograd's device queues)."""

from __future__ import annotations

CODE = """
import threading, torch
x = torch.ones(2, requires_grad=True)
(x * 2).sum().backward()                      # the engine starts its device threads here
from accel_neuron import emulator
emulator.install()
y = torch.ones(2, device="neuron", requires_grad=True)
(y * 3).sum().backward()
out = [y.grad.cpu().tolist()]
def worker():
    z = torch.ones(2, device="neuron", requires_grad=True)
    (z * 4).sum().backward()
    out.append(z.grad.cpu().tolist())
t = threading.Thread(target=worker); t.start(); t.join(60)
print(out)
"""


def test_backward_before_install_then_neuron_backward(run_python) -> None:  # type: ignore[no-untyped-def]
    result = run_python(CODE)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[[3.0, 3.0], [4.0, 4.0]]"
