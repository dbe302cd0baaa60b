"""Run PyTorch's own device-generic test files on the CPU and on the emulated neuron device, side by side.

Run (``nox -s torch_tests -- TREE [FILE ...]`` does it in the dev environment)::

    python plugins/neuron/tests/scripts/torch_suite.py TREE [FILE ...]

``TREE`` is a PyTorch test tree of the installed release (``torch_tests_tree.py`` builds one
into the git-ignored ``.cache/``); ``FILE`` paths are relative to its ``test/`` folder (default:
the eight files of :data:`DEFAULT_FILES`). Each file runs once per device in a fresh pytest, the
way PyTorch validates out-of-tree devices: ``instantiate_device_type_tests`` makes a class per
device type, ``PYTORCH_TESTING_DEVICE_ONLY_FOR`` keeps the CPU's (``TestFooCPU``) in one run and
the PrivateUse1 one (``TestFooPRIVATEUSE1``, the emulated device) in the other. Before running, the
series for the installed torch (``patches/pytorch/<release>/``) is applied: its wheel patches as
an overlay both runs import torch through, its patches to PyTorch's test files to the tree
(``--stock`` runs without either). Tests are compared by name with the device taken out; the
table shows passed / failed / skipped / errors and wall time per device, then every test that
passes on the CPU and fails (or is missing) on neuron, with the first line of its message, split
into what AWS documents Trainium does not run (an operator of ``accel_neuron/trainium_ops.tsv`` in
the message: ``--strict`` runs the device with ``ACCEL_NEURON_STRICT=1`` so that such operators fail
naming themselves), what meets an emulator limit where TorchNeuron's documentation is silent
(:data:`EMULATOR_LIMITS`: sparse layouts, nested tensors; still open) and all others (bugs to fix). Tests only the device runs (accelerator-only, the CPU
skips them) are counted apart. junit XML and logs go to ``TREE/.accel-torch/``; ``--json`` writes
the counts, times and failures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from transformers_suite import _outcomes as junit_outcomes  # noqa: E402
from transformers_suite import leg_row, print_rows  # noqa: E402

DEFAULT_FILES = (
    "test_view_ops.py",
    "test_shape_ops.py",
    "test_indexing.py",
    "test_optim.py",
    "nn/test_dropout.py",
    "nn/test_embedding.py",
    "nn/test_pooling.py",
    "nn/test_convolution.py",
)
HOW_TO_GET = (
    "PyTorch's tests are not in its wheel. Get the test tree of the installed release (a sparse checkout, "
    "see docs/ci.md):\n  python plugins/neuron/tests/scripts/torch_tests_tree.py\n"
    "then: nox -s torch_tests -- .cache/pytorch-<tag>"
)
#: Each leg's environment: the backend selection and PyTorch's own device filter.
DEVICES = {
    "cpu": {"ACCEL_BACKEND": "cpu", "PYTORCH_TESTING_DEVICE_ONLY_FOR": "cpu"},
    "neuron": {"ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1", "PYTORCH_TESTING_DEVICE_ONLY_FOR": "privateuse1"},
}  # fmt: skip
_OUTCOME_FAILED = ("failed", "error", "missing")
#: What the emulator refuses by a limit of its own where TorchNeuron's documentation says nothing
#: (plugins/neuron/README.md, "Emulator limits"), as the failure message shows it. Such failures are
#: listed apart, named by the limit, and still count as open (exit status 1) until a documented
#: TorchNeuron fact decides them.
EMULATOR_LIMITS = {
    "sparse layouts (undocumented for TorchNeuron; refused by the emulator)":
        r"EmulatorError: aten::\w+: a (?:torch\.)?sparse\w* tensor on the neuron device",
    "nested tensors of the strided kind (undocumented for TorchNeuron; refused by the emulator)":
        r"EmulatorError: aten::\w+: a nested tensor \(torch\.nested, layout=torch\.strided\) on the neuron device",
}  # fmt: skip


def generic_id(test_id: str, device: str) -> str:
    """``m.TestViewOpsPRIVATEUSE1::test_view_neuron_float32`` -> ``m.TestViewOps::test_view_<device>_float32``.

    ``instantiate_device_type_tests`` appends the device type in capitals to the class name (for
    an out-of-tree device: ``PRIVATEUSE1``, whatever its name) and inserts the device type after
    the test's name in the method name (before the dtype).
    A class that was not instantiated per device (no device suffix: ``TestPoolingNN``) runs as is
    on both legs: its test names are PyTorch's own (``test_max_unpool2d_nhwc_cpu``) and kept.
    """
    cls, _, name = test_id.partition("::")
    generic_cls = re.sub(f"(?:{device.upper()}|PRIVATEUSE1)$", "", cls)
    if generic_cls == cls:
        return test_id
    cls = generic_cls
    head, sep, tail = name.rpartition(f"_{device}")
    if sep and (not tail or tail.startswith(("_", "["))):
        name = f"{head}_<device>{tail}"
    return f"{cls}::{name}"


def compare(cpu: dict[str, tuple[str, str]], neuron: dict[str, tuple[str, str]]) -> dict[str, list]:
    """CPU-pass/neuron-fail pairs and accelerator-only tests, by generic name.

    ``cpu`` and ``neuron`` map each leg's test ids to ``(outcome, message)``.
    """
    c = {generic_id(t, "cpu"): v for t, v in cpu.items()}
    n = {generic_id(t, "neuron"): v for t, v in neuron.items()}
    fails = [(t, n.get(t, ("missing", ""))) for t, (o, _) in c.items() if o == "passed"]
    return {
        "cpu_pass_neuron_fail": [(t, got[0], got[1]) for t, got in fails if got[0] in _OUTCOME_FAILED],
        "neuron_only": [(t, o, m) for t, (o, m) in n.items() if t not in c or c[t][0] == "skipped"],
    }


def trainium_ops() -> dict[str, str]:
    """Operator name (``quantize_per_tensor``) -> its documented status, from the Trainium table."""
    from accel_neuron.trainium_ops import load

    return {row.op.split("::", 1)[1]: f"{row.status} ({row.source}, {row.release})" for row in load()}


def documented(message: str, table: dict[str, str]) -> str | None:
    """The documented Trainium status of the table operator ``message`` names, or ``None``.

    The operator the message is about (``aten::NAME`` as the emulator writes it) comes first; else
    the first table operator named anywhere in the message.
    """
    for name in re.findall(r"aten::(\w+)", message):
        if name in table:
            return f"{name}: {table[name]}"
    for name, status in table.items():
        if re.search(rf"\b{re.escape(name)}\b", message):
            return f"{name}: {status}"
    return None


def emulator_limit(message: str) -> str | None:
    """The :data:`EMULATOR_LIMITS` entry whose pattern ``message`` matches, or ``None``."""
    return next((name for name, pattern in EMULATOR_LIMITS.items() if re.search(pattern, message)), None)


def prepare(tree: Path, work: Path, files: list[str]) -> list[str]:
    """Apply the installed torch's series: wheel patches as an overlay (its path is returned as the
    runner's prefix), the patches to PyTorch's test files that change one of ``files`` to ``tree``."""
    from accel_abstraction.patching.apply import write_overlay
    from accel_abstraction.patching.series import installed_torch_root, load_series, torch_version_at
    from accel_abstraction.patching.test_tree import apply_to_tree

    root = installed_torch_root()
    series = load_series(torch_version_at(root))
    for result in apply_to_tree(series, tree, [f"test/{f}" for f in files]):
        print(f"{result.patch}: {result.state} (test tree {tree})")
    overlay = work / "overlay"
    write_overlay(series, root, overlay)  # made again each run: the series may have changed since
    # pytest's console script as the runner's target: its options follow the script, not ``-m``
    return ["-m", "accel_abstraction.patching.run", "--overlay", str(overlay), str(Path(sys.executable).with_name("pytest"))]


def leg_environment(
    device: str, strict: bool = False, hot_path: str | None = None, base: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment one leg runs in: the caller's, less every ``ACCEL_*`` and testing-device variable
    (a setting left in the shell must not change a leg), plus the leg's own. The emulator's per-op path
    reaches the neuron leg only through ``hot_path`` (``--hot-path``): set in the shell, it is cleared."""
    base = dict(os.environ if base is None else base)
    full = {k: v for k, v in base.items() if not k.startswith(("ACCEL_", "PYTORCH_TESTING_DEVICE"))}
    full.update(DEVICES[device], OMP_NUM_THREADS=full.get("OMP_NUM_THREADS", "1"))
    # suite_clock.py (loaded with -p) records each test's thread CPU time next to pytest's wall time
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), full.get("PYTHONPATH", "")) if p)
    if device == "neuron":
        if strict:
            full["ACCEL_NEURON_STRICT"] = "1"  # refuse what TorchNeuron documents as N / CPU_FALLBACK
        if hot_path:
            full["ACCEL_NEURON_EMULATOR_HOT_PATH"] = hot_path
    return full


def _stem(test_file: str) -> str:
    """The name of a test file's junit XML and log in the work folder, less the device."""
    return test_file.replace("/", "-").removesuffix(".py")


def run_legs(
    tree: Path, work: Path, test_file: str, runner: list[str], pytest_args: list[str], timeout: float,
    strict: bool = False, hot_path: str | None = None, concurrent: bool = False,
) -> dict[str, tuple[dict[str, tuple[str, str]], float]]:
    """Run `test_file` once per device in a fresh pytest: each device's outcomes and wall seconds.

    One leg after the other by default; ``concurrent`` starts both at once, so that on a shared
    machine both see the same neighbours over the same minutes (each leg computes on one thread:
    ``OMP_NUM_THREADS=1`` unless set), which makes their per-test times comparable."""
    stem = _stem(test_file)

    def leg(device: str) -> tuple[dict[str, tuple[str, str]], float]:
        junit = work / f"{stem}-{device}.xml"
        junit.unlink(missing_ok=True)  # a run that is killed must not leave the last run's results
        start = time.perf_counter()
        with open(junit.with_suffix(".log"), "wb") as log:
            try:
                subprocess.run(
                    [sys.executable, *(runner or ["-m", "pytest"]), "-q", "-p", "no:cacheprovider",
                     "-p", "suite_clock", "--junitxml", str(junit), *pytest_args, test_file],
                    cwd=tree / "test", env=leg_environment(device, strict, hot_path), timeout=timeout, stdout=log,
                    stderr=subprocess.STDOUT,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                log.write(f"\naccel torch_suite: timed out after {timeout:.0f} s\n".encode())
        return junit_outcomes(junit), time.perf_counter() - start

    with ThreadPoolExecutor(max_workers=len(DEVICES) if concurrent else 1) as pool:
        started = {device: pool.submit(leg, device) for device in DEVICES}
        return {device: future.result() for device, future in started.items()}


def run(
    tree: Path, files: list[str], timeout: float, pytest_args: list[str], report: Path | None, stock: bool, strict: bool,
    hot_path: str | None = None, concurrent: bool = False,
) -> int:
    work = tree / ".accel-torch"
    work.mkdir(exist_ok=True)
    runner = [] if stock else prepare(tree, work, files)
    table = trainium_ops()
    rows, bugs, trainium, limits, accel_only = [], [], [], [], 0
    for test_file in files:
        per_device = run_legs(tree, work, test_file, runner, pytest_args, timeout, strict, hot_path, concurrent)
        stem = _stem(test_file)
        found = compare(per_device["cpu"][0], per_device["neuron"][0])
        for tid, outcome, message in found["cpu_pass_neuron_fail"]:
            why = documented(message, table)
            limit = None if why else emulator_limit(message)
            group = trainium if why else limits if limit else bugs
            group.append((test_file, tid, f"{outcome}: {message}", why or limit))
        accel_only += len(found["neuron_only"])
        for device, (outcomes, seconds) in per_device.items():
            rows.append(leg_row(test_file, device, work / f"{stem}-{device}.log", outcomes, seconds))
    print_rows(rows, 28)
    print(f"\n{accel_only} test(s) ran on neuron only (the CPU skips or lacks them), not compared.")
    print(f"\n{len(bugs)} test(s) pass on the CPU and fail on neuron:")
    for test_file, tid, message, _ in bugs:
        print(f"  {test_file} {tid}: {message}")
    print(f"\n{len(trainium)} more use an operator AWS documents as not run natively on Trainium:")
    for test_file, tid, message, why in trainium:
        print(f"  {test_file} {tid}: {message} [{why}]")
    print(f"\n{len(limits)} more meet an emulator limit where TorchNeuron's documentation is silent (open):")
    for test_file, tid, message, limit in limits:
        print(f"  {test_file} {tid}: {message} [{limit}]")
    if report is not None:
        data = {
            "patched": not stock,
            "strict": strict,
            "rows": [{"file": f, "device": d, **c, "seconds": round(t, 1)} for f, d, c, t in rows],
            "cpu_pass_neuron_fail": [{"file": f, "test": t, "message": m} for f, t, m, _ in bugs],
            "trainium_documented": [{"file": f, "test": t, "message": m, "documented": w} for f, t, m, w in trainium],
            "emulator_limits": [{"file": f, "test": t, "message": m, "limit": w} for f, t, m, w in limits],
            "neuron_only_tests": accel_only,
        }
        from accel_abstraction.safe_io import atomic_write

        atomic_write(report, json.dumps(data, indent=1) + "\n", what="the torch_tests report")
    return 1 if bugs or limits else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", nargs="?", type=Path, help="a PyTorch test tree (with test/) of the installed release")
    parser.add_argument("files", nargs="*", default=list(DEFAULT_FILES), help="paths relative to TREE/test")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per file and device")
    parser.add_argument("--pytest-args", default="", help="options for every pytest run, one string")
    parser.add_argument("--json", type=Path, help="also write the counts, times and failures here")
    parser.add_argument("--stock", action="store_true", help="run without the patch series (torch and tests as shipped)")
    parser.add_argument(
        "--strict", action="store_true",
        help="run the neuron leg with ACCEL_NEURON_STRICT=1: operators AWS documents as not native on Trainium "
             "fail naming the operator and the source, and are listed apart",
    )  # fmt: skip
    parser.add_argument(
        "--hot-path", choices=("native", "python"),
        help="the emulator's per-op path for the neuron leg (ACCEL_NEURON_EMULATOR_HOT_PATH; default: native). "
             "The variable set in the shell does not reach the legs: every ACCEL_* variable is cleared",
    )  # fmt: skip
    parser.add_argument(
        "--concurrent-legs", action="store_true",
        help="run the cpu and neuron legs of each file at the same time (each on one thread): on a shared machine "
             "both then see the same load, so the wall-time ratio compares the devices, not the neighbours' minutes",
    )  # fmt: skip
    args = parser.parse_args()
    if args.tree is None or not (args.tree / "test").is_dir():
        print(HOW_TO_GET, file=sys.stderr)
        return 2
    missing = [f for f in args.files if not (args.tree / "test" / f).is_file()]
    if missing:
        print(f"not in {args.tree}/test: {', '.join(missing)}\n{HOW_TO_GET}", file=sys.stderr)
        return 2
    return run(
        args.tree.resolve(), args.files, args.timeout, shlex.split(args.pytest_args), args.json, args.stock, args.strict,
        args.hot_path, args.concurrent_legs,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
