"""Print op_db / module_db conformance totals of the emulated neuron device (numbers for the notes).

Run: ``OMP_NUM_THREADS=1 python plugins/neuron/tests/scripts/db_totals.py [--dtype float32] [--modules]``.
Failures are listed whether or not the expected-failure table covers them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import neuron_db_harness as h  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="float32")
    p.add_argument("--modules", action="store_true", help="module_db instead of op_db")
    p.add_argument("-k", default="", help="only names containing this")
    a = p.parse_args()
    dtype = getattr(torch, a.dtype)
    from accel_neuron import emulator

    emulator.install()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    if a.modules:
        from torch.testing._internal.common_modules import module_db

        items = [
            (f"{m.name}-{'train' if t else 'eval'}", (m, t))
            for m in module_db
            for t in ((True, False) if m.train_and_eval_differ else (True,))
        ]
    else:
        from torch.testing._internal.common_methods_invocations import op_db

        items = list(zip(h.op_ids(op_db), op_db, strict=True))
    fc = fp = bc = bp = 0
    slow = []
    for name, item in items:
        if a.k and a.k not in name:
            continue
        t = time.perf_counter()
        if a.modules:
            o = h.check_module(item[0], dtype, training=item[1])
        else:
            o = h.check_op(item, dtype)
        slow.append((time.perf_counter() - t, name))
        if o.forward != h.NOT_COMPARABLE:
            fc += 1
            fp += o.forward == h.PASS
        if o.backward != h.NOT_COMPARABLE:
            bc += 1
            bp += o.backward == h.PASS
        if o.forward == h.FAIL:
            print(f"FWD {name}: {o.forward_msg}", flush=True)
        if o.backward == h.FAIL:
            print(f"BWD {name}: {o.backward_msg}", flush=True)
    print(
        f"{len(items)} entries; forward: {fp}/{fc} bitwise; backward: {bp}/{bc} bitwise; "
        f"{time.perf_counter() - t0:.1f} s wall, {time.process_time():.1f} s CPU (process)"
    )
    for s, n in sorted(slow, reverse=True)[:15]:
        print(f"  {s:6.2f} s {n}")


if __name__ == "__main__":
    main()
