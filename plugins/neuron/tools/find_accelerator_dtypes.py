"""Find the ops whose CUDA kernels accept dtypes their CPU kernels reject, from PyTorch's OpInfo database.

Library code picks dtypes that accelerator kernels accept whenever the device is not the CPU
(``torch.histc`` on int32 in transformers' mixture-of-experts routing); the emulator runs
CPU kernels, so each such (op, dtype) is a place where it must compute what CUDA computes.

    python plugins/neuron/tools/find_accelerator_dtypes.py [--out FILE]

writes a JSON list (default: ``plugins/neuron/accel_neuron/emulator/accelerator_dtypes.json``)
of ``{"op": name, "variant": variant_test_name, "aten": [overload packets], "dtypes": [...],
"cpu_rejects": [...]}``, one entry per OpInfo with dtypes that ``op.supported_dtypes("cuda")``
lists and ``op.supported_dtypes("cpu")`` does not; ``cpu_rejects`` are those of them for which
the op's first sample input actually raises on the CPU (the declared lists lag the kernels).
Needs ``expecttest`` (dev requirements); no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import torch

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "accel_neuron" / "emulator" / "accelerator_dtypes.json"


def _aten_names(op: object) -> list[str]:
    names = {getattr(op, "name", "")}
    for attr in ("aten_name", "aten_backward_name"):
        value = getattr(op, attr, None)
        if value:
            names.add(value)
    return sorted(n for n in names if n and hasattr(torch.ops.aten, n))


def _cpu_rejects(op: object, dtype: torch.dtype) -> bool:
    """Whether the op's first CPU sample input in `dtype` raises (False when there is no sample)."""
    try:
        sample = next(iter(op.sample_inputs("cpu", dtype, requires_grad=False)))  # type: ignore[attr-defined]
    except Exception:  # a sample generator that cannot make this dtype on the CPU at all
        return True
    try:
        op(sample.input, *sample.args, **sample.kwargs)  # type: ignore[operator]
    except (RuntimeError, NotImplementedError, TypeError):
        return True
    return False


def find() -> list[dict[str, object]]:
    """One entry per OpInfo whose CUDA dtypes include some its CPU dtypes do not."""
    from torch.testing._internal.common_methods_invocations import op_db

    out = []
    for op in op_db:
        extra = set(op.supported_dtypes("cuda")) - set(op.supported_dtypes("cpu"))
        if not extra:
            continue
        out.append(
            {
                "op": op.name,
                "variant": op.variant_test_name,
                "aten": _aten_names(op),
                "dtypes": sorted(str(d).removeprefix("torch.") for d in extra),
                "cpu_rejects": sorted(str(d).removeprefix("torch.") for d in extra if _cpu_rejects(op, d)),
            }
        )
    out.sort(key=lambda e: (e["op"], e["variant"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    found = find()
    text = json.dumps(
        {
            "torch": torch.__version__.split("+")[0],
            "source": "OpInfo supported_dtypes('cuda') - ('cpu')",
            "ops": found,
        },
        indent=1,
    )
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, prefix=args.out.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    os.replace(tmp, args.out)
    print(f"{len(found)} ops with accelerator-only dtypes -> {args.out}")


if __name__ == "__main__":
    main()
