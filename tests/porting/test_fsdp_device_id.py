"""FSDP's ``device_id``: the port's ``accel.fsdp_device_id(...)`` runs on the cpu backend where the
original stops, and names the same device the original did where devices have indices."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from accel_abstraction.porting import port_source, scan_source
from accel_abstraction.testing.ports import free_port

torch = pytest.importorskip("torch", reason="runs FSDP and accel.fsdp_device_id (the notorch nox leg has no torch)")

import accel_abstraction as accel  # noqa: E402
from accel_abstraction.distributed.ddp import fsdp_device_id_for  # noqa: E402

ORIGINALS = (
    "model = FSDP(torch.nn.Linear(2, 1), device_id=rank)",
    "model = FSDP(torch.nn.Linear(2, 1), device_id=torch.cuda.current_device())",
    'model = FSDP(torch.nn.Linear(2, 1), device_id=torch.device("cuda", rank))',
)
PORTED = (
    "model = FSDP(torch.nn.Linear(2, 1), device_id=accel.fsdp_device_id(rank))",
    "model = FSDP(torch.nn.Linear(2, 1), device_id=accel.fsdp_device_id())",
    "model = FSDP(torch.nn.Linear(2, 1), device_id=accel.fsdp_device_id(rank))",
)

#: One gloo process on 127.0.0.1: build the FSDP line, run a step, say what FSDP computes on.
#: ``{redirect}``: install the runtime redirect (what ``accel run`` does) first, with FSDP imported
#: before it (its redirect goes in at once) or after it (on import); ``{undo}``: undo it at the end.
SCRIPT = """
import sys, warnings
import torch
import torch.distributed as dist
import accel_abstraction as accel
accel.use("cpu")
warnings.simplefilter("ignore")
{redirect}
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:{port}", world_size=1, rank=0, timeout=__import__("datetime").timedelta(seconds=60))
rank = 0
try:
    {line}
    model(torch.ones(3, 2)).sum().backward()
    print("ran on", model.compute_device)
except RuntimeError as exc:
    print("stopped:", exc)
finally:
    dist.destroy_process_group()
{undo}
"""
REDIRECT = {
    "fsdp-imported-after": "r = accel.redirect_cuda()",
    "fsdp-imported-before": "import torch.distributed.fsdp\nr = accel.redirect_cuda()",
}
UNDO = """patched = FSDP.__init__
r.undo()
print("restored", FSDP.__init__ is not patched and FSDP.__init__.__module__ == FSDP.__module__)"""


def _run(line: str, redirect: str = "", undo: str = "") -> str:
    code = textwrap.dedent(SCRIPT).replace("{port}", str(free_port())).replace("{line}", line)
    code = code.replace("{redirect}", redirect).replace("{undo}", undo)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize(("original", "ported"), list(zip(ORIGINALS, PORTED, strict=True)))
def test_fsdp_device_id_is_reported_and_ported(original: str, ported: str) -> None:
    source = "import torch\n" + original + "\n"
    assert "ACC172" in {f.code for f in scan_source(source).findings}
    result = port_source(source)
    assert result.output.splitlines()[-1] == ported and result.manual == []
    assert port_source(result.output).output == result.output


def test_ported_fsdp_line_runs_on_the_cpu_backend_where_the_original_stops() -> None:
    assert _run(ORIGINALS[0]).startswith("stopped:")  # torch.device(0): no accelerator here
    assert _run(PORTED[0]) == "ran on cpu" and _run(PORTED[1]) == "ran on cpu"


def test_fsdp_device_id_is_cpu_on_cpu_and_the_index_where_devices_have_one(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = accel.use("cpu")
    assert accel.fsdp_device_id(3) == torch.device("cpu") and accel.fsdp_device_id() == torch.device("cpu")
    indexed = {0: torch.device("meta", 0), 2: torch.device("meta", 2)}
    monkeypatch.setattr(backend, "device", lambda i=None: indexed.get(i, torch.device("meta")))
    monkeypatch.setattr(backend, "current_device", lambda: 2)
    assert fsdp_device_id_for(backend, 0) == torch.device("meta", 0)
    assert fsdp_device_id_for(backend) == torch.device("meta", 2)



@pytest.mark.parametrize("order", sorted(REDIRECT))
def test_the_redirect_gives_fsdp_the_device_the_port_gives(order: str) -> None:
    out = _run(ORIGINALS[0], REDIRECT[order], UNDO)
    assert out.splitlines() == ["ran on cpu", "restored True"], out
