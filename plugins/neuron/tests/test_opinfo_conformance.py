"""Emulated neuron against the CPU, bit for bit, on PyTorch's own operator database (op_db).

Every OpInfo with float32 support: its first samples (``neuron_db_harness.SAMPLES_PER_OP``)
forward, and backward where the OpInfo supports autograd. The bfloat16 leg is labelled
slow. Expected failures, each with its reason, live in ``neuron_db_xfails.OPS``.
Totals for the notes: ``python plugins/neuron/tests/scripts/db_totals.py``.
"""

from __future__ import annotations

import neuron_db_harness as harness
import pytest
import torch
from neuron_db_xfails import OPS, verdict

# the conformance tier (conftest.py at the repository root; docs/testing.md)
pytestmark = pytest.mark.conformance

_OPS = harness.op_db()
_F32 = [op for op in _OPS if torch.float32 in op.supported_dtypes("cpu")]
_BF16 = [op for op in _OPS if torch.bfloat16 in op.supported_dtypes("cpu")]

harness.unfreeze_backend_flags()


def _check(op, dtype: torch.dtype) -> None:
    name = harness.op_ids([op])[0]
    outcome = harness.check_op(op, dtype)
    expected = OPS.get((name, dtype))
    if outcome.forward == harness.NOT_COMPARABLE and expected is None:
        pytest.skip("not comparable: the CPU rejects every sample (or none can be generated)")
    failures, xfails = verdict(name, outcome, expected)
    if failures:
        pytest.fail("\n".join(failures))
    if xfails:
        pytest.xfail("; ".join(xfails))


@pytest.mark.parametrize("op", _F32, ids=harness.op_ids(_F32))
def test_op_float32_matches_cpu(neuron_emulator, op) -> None:
    _check(op, torch.float32)


@pytest.mark.slow
@pytest.mark.parametrize("op", _BF16, ids=harness.op_ids(_BF16))
def test_op_bfloat16_matches_cpu(neuron_emulator, op) -> None:
    _check(op, torch.bfloat16)
