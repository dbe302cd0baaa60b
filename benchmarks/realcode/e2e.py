"""End to end on real scripts: original on CPU vs ported on the cpu backend and on emulated neuron, losses compared.

For each scenario: the cached original files are copied to ``orig/`` and, after
``accel port``, to ``ported/`` of a scratch folder; synthetic data written here (never a
download) goes into both.  The original runs with its CPU settings; the ported copy runs
twice, with ``ACCEL_BACKEND=cpu`` and the same settings (a port must not change what the
program does where it ran before: the printed values must be equal) and with
``ACCEL_BACKEND=neuron ACCEL_NEURON_EMULATE=1``, the backend selected before the
script starts (``accel.use()``, then the script as ``__main__``), so scripts that already
ask ``torch.accelerator`` take the neuron path too.  Every loss the script prints is
extracted with the scenario's pattern; the run is *identical* when both lists are equal
as printed.

Usage: ``python benchmarks/bench_realcode.py --run`` (minutes on two cores).
``REALCODE_ACCEL_TREE=/path/to/checkout`` runs the ported side against another checkout
of accel-abstraction (say, one with an emulator fix not merged yet).
"""

from __future__ import annotations

import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

try:
    from .build_cache import CACHE, ROOT
except ImportError:  # run as a script
    from build_cache import CACHE, ROOT  # type: ignore[no-redef]

PYTHON = sys.executable
#: Our own scripts in the shapes of real ones (committed; third-party code stays in the cache).
OURS = Path(__file__).resolve().parent / "scripts"
LAUNCH = (
    "import runpy, sys; import accel_abstraction as accel; accel.use(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


@dataclass
class Scenario:
    name: str
    repo: str  # cache folder, owner+name
    files: list[str]  # paths inside the repository, the script first
    cpu_args: list[str]
    neuron_args: list[str]
    loss: str  # regular expression with one group: a printed loss
    data: Callable[[Path], None]
    note: str = ""
    timeout: int = 600
    env: dict[str, str] = field(default_factory=dict)
    #: why identical output is impossible by the script's own design (None: it is possible)
    cannot_match: str | None = None
    #: the folder holding ``files`` (None: the cache's ``repo`` folder); our own scripts live in ``scripts/``
    root: Path | None = None
    #: how many processes torchrun starts (0: the script runs as a plain program)
    torchrun: int = 0


def _nanogpt_data(folder: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    data = folder / "data" / "tiny"
    data.mkdir(parents=True)
    rng.integers(0, 65, 4096, dtype=np.uint16).tofile(data / "train.bin")
    rng.integers(0, 65, 1024, dtype=np.uint16).tofile(data / "val.bin")
    chars = "\n" + "".join(chr(c) for c in range(ord("!"), ord("!") + 64))
    with open(data / "meta.pkl", "wb") as fh:
        pickle.dump({"vocab_size": 65, "stoi": {c: i for i, c in enumerate(chars)}, "itos": dict(enumerate(chars))}, fh)


_CHECKPOINT: dict[str, bytes] = {}


def _nanogpt_checkpoint(folder: Path) -> None:
    """Data plus ``out/ckpt.pt``, trained once by the original train.py on the CPU."""
    _nanogpt_data(folder)
    if "ckpt" not in _CHECKPOINT:
        with tempfile.TemporaryDirectory(prefix="realcode-ckpt-") as tmp:
            stage = Path(tmp)
            _nanogpt_data(stage)
            for name in ("train.py", "model.py", "configurator.py"):
                shutil.copy(CACHE / "karpathy+nanoGPT" / name, stage / name)
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            args = [*NANOGPT_TINY, "--device=cpu", "--always_save_checkpoint=True"]
            rc, out, err = _run([PYTHON, "train.py", *args], stage, env, 600)
            if rc != 0:
                raise RuntimeError(f"training the checkpoint failed: {err[-500:]}")
            _CHECKPOINT["ckpt"] = (stage / "out" / "ckpt.pt").read_bytes()
    (folder / "out").mkdir()
    (folder / "out" / "ckpt.pt").write_bytes(_CHECKPOINT["ckpt"])
    # sample.py imports tiktoken but uses it only without meta.pkl (which we write): a stand-in
    (folder / "tiktoken.py").write_text(
        "def get_encoding(name):\n    raise RuntimeError('tiktoken stand-in: the e2e data has meta.pkl')\n"
    )


def _words_data(folder: Path) -> None:
    rnd = random.Random(0)
    vocab = [f"w{i}" for i in range(50)]
    data = folder / "data"
    data.mkdir()
    for name, lines in (("train.txt", 60), ("valid.txt", 12), ("test.txt", 12)):
        text = "\n".join(" ".join(rnd.choice(vocab) for _ in range(12)) for _ in range(lines))
        (data / name).write_text(text + "\n")


_FAKE_TORCHVISION = '''
"""Stand-in for the two torchvision pieces mnist/main.py uses (no torchvision build
matches this CPU torch): MNIST-shaped synthetic images, ToTensor and Normalize."""
'''


def _mnist_data(folder: Path) -> None:
    pkg = folder / "torchvision"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_FAKE_TORCHVISION + "from . import datasets, transforms\n")
    (pkg / "transforms.py").write_text(textwrap.dedent('''
        class Compose:
            def __init__(self, steps):
                self.steps = steps
            def __call__(self, x):
                for step in self.steps:
                    x = step(x)
                return x
        class ToTensor:
            def __call__(self, x):
                return x
        class Normalize:
            def __init__(self, mean, std):
                self.mean, self.std = mean[0], std[0]
            def __call__(self, x):
                return (x - self.mean) / self.std
        '''))
    (pkg / "datasets.py").write_text(textwrap.dedent('''
        import torch
        class MNIST(torch.utils.data.Dataset):
            def __init__(self, root, train=True, download=False, transform=None):
                g = torch.Generator().manual_seed(0 if train else 1)
                n = 256 if train else 64
                self.x = torch.rand(n, 1, 28, 28, generator=g)
                self.y = torch.randint(0, 10, (n,), generator=g)
                self.transform = transform
            def __len__(self):
                return len(self.y)
            def __getitem__(self, i):
                x = self.x[i]
                return (self.transform(x) if self.transform else x), int(self.y[i])
        '''))


NANOGPT_TINY = [
    "--dataset=tiny", "--batch_size=4", "--block_size=32", "--n_layer=2", "--n_head=2", "--n_embd=32",
    "--max_iters=6", "--lr_decay_iters=6", "--warmup_iters=1", "--eval_interval=3", "--eval_iters=2",
    "--log_interval=1", "--compile=False", "--dtype=float32", "--dropout=0.0", "--gradient_accumulation_steps=1",
]  # fmt: skip
SAMPLE = ["--out_dir=out", "--num_samples=2", "--max_new_tokens=24", "--top_k=1", "--compile=False", "--dtype=float32"]
WLM = ["--data", "data", "--epochs", "2", "--emsize", "16", "--nhid", "16", "--bptt", "8", "--batch_size", "4",
       "--log-interval", "5", "--save", "model.pt", "--dropout", "0.0"]  # fmt: skip

SCENARIOS = [
    Scenario(
        "nanoGPT train.py", "karpathy+nanoGPT", ["train.py", "model.py", "configurator.py"],
        [*NANOGPT_TINY, "--device=cpu"], NANOGPT_TINY, r"loss (\d+\.\d+)", _nanogpt_data,
        note="ported: device is accel.device_type() (a str the configurator accepts); tied wte/lm_head weights",
    ),
    Scenario(
        "nanoGPT sample.py", "karpathy+nanoGPT", ["sample.py", "model.py", "configurator.py"],
        [*SAMPLE, "--device=cpu"], SAMPLE, r"(?m)^((?!Overriding).+)$", _nanogpt_checkpoint,
        note="compares the sampled text (top_k=1: greedy) from a checkpoint the original train.py wrote on cpu; "
        "torch.load(map_location=accel.device_type())",
    ),
    Scenario(
        "word_language_model (LSTM)", "pytorch+examples",
        ["word_language_model/main.py", "word_language_model/model.py", "word_language_model/data.py"],
        WLM, [*WLM, "--accel"], r"loss\s+(\d+\.\d+)", _words_data, note="nn.LSTM on the device",
    ),
    Scenario(
        "word_language_model (Transformer)", "pytorch+examples",
        ["word_language_model/main.py", "word_language_model/model.py", "word_language_model/data.py"],
        [*WLM, "--model", "Transformer"], [*WLM, "--model", "Transformer", "--accel"], r"loss\s+(\d+\.\d+)",
        _words_data,
        cannot_match="nn.Transformer's own dropout=0.1 (not --dropout) draws from the device generator in training",
    ),
    Scenario(
        "mnist main.py", "pytorch+examples", ["mnist/main.py"],
        ["--epochs", "1", "--batch-size", "32", "--test-batch-size", "64", "--log-interval", "2", "--no-accel"],
        ["--epochs", "1", "--batch-size", "32", "--test-batch-size", "64", "--log-interval", "2"],
        r"Loss: (\d+\.\d+)|loss: (\d+\.\d+)", _mnist_data,
        note="torchvision replaced by a synthetic-data stand-in; accelerator path: DataLoader worker, pin_memory",
        cannot_match="the script shuffles only on its accelerator path, and its dropout draws from the device generator",
    ),
    # our own scripts (benchmarks/realcode/scripts/) for shapes no runnable third-party script here covers
    Scenario(
        "speed script (ours: compile, bf16, fused AdamW, CUDA events, capability check)", "ours", ["speed_cuda.py"],
        ["--compile-backend", "aot_eager"], ["--compile-backend", "aot_eager"], r"loss (\d+\.\d+)", lambda folder: None,
        root=OURS, note="rasbt's 01_opt_single_gpu.py has these shapes, with a 124M model fixed in its __main__",
    ),
    Scenario(
        "torchrun DDP (ours: 2 ranks, device_ids=[local_rank], DistributedSampler)", "ours", ["ddp_torchrun_cuda.py"],
        [], [], r"(rank \d+ epoch \d+ loss \d+\.\d+)", lambda folder: None, root=OURS, torchrun=2,
        note="nanoGPT's train.py has the shape, but under torchrun its original asks for cuda:{rank} even on a CPU",
    ),
]  # fmt: skip


def _losses(pattern: str, text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None) for m in re.finditer(pattern, text)]


def _error_line(stderr: str) -> str:
    """The exception line of a traceback (its first line, without the dispatcher's listing)."""
    lines = stderr.strip().splitlines()
    for line in reversed(lines):
        if re.match(r"^[\w.]*(Error|Exception)\b", line):
            return line[:300]
    return lines[-1][:300] if lines else ""


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int) -> tuple[int, str, str]:
    try:
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout}s"
    return done.returncode, done.stdout, done.stderr


def _compare(name: str, cpu: list[str], rc: int, out: list[str], err: str) -> tuple[str, str]:
    if rc != 0:
        return "failed", f"ported on {name}: exit {rc}: {_error_line(err)}"
    if cpu == out:
        return "identical", f"{len(cpu)} printed values equal, first {cpu[0]!r}, last {cpu[-1]!r}"
    first = next(i for i, (a, b) in enumerate(zip(cpu, out, strict=False)) if a != b) if len(cpu) == len(out) else -1
    return "different", f"first difference at #{first} of {len(cpu)}: original {cpu[first:first + 3]} vs {name} {out[first:first + 3]}"


def run_scenario(sc: Scenario, scratch: Path) -> list[tuple[str, str, str]]:
    """``[(backend, verdict, detail)]`` for the ported copy on the cpu backend and on emulated neuron;
    verdict is ``identical``, ``different`` or ``failed``."""
    from accel_abstraction.porting.codemod import port_source

    base = sc.root or CACHE / sc.repo
    script_dir = Path(sc.files[0]).parent
    for side in ("orig", "ported"):
        (scratch / side).mkdir()
        sc.data(scratch / side)
        for rel in sc.files:
            src = base / rel
            dst = scratch / side / Path(rel).relative_to(script_dir)
            dst.parent.mkdir(parents=True, exist_ok=True)
            text = src.read_text(encoding="utf-8")
            if side == "ported":
                result = port_source(text, rel)
                if result.error:
                    return [("any", "failed", f"port refused {rel}: {result.error}")]
                text = result.output
            dst.write_text(text, encoding="utf-8")
    script = Path(sc.files[0]).name
    tree = Path(os.environ.get("REALCODE_ACCEL_TREE", ROOT))  # another checkout's emulator, to compare
    path = os.pathsep.join([str(tree), *(str(tree / "plugins" / p) for p in ("cpu", "cuda", "neuron"))])
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("ACCEL_")}
    base_env.update({"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0", **sc.env})
    cpu_env = {**base_env, "PYTHONPATH": os.pathsep.join([str(scratch / "orig"), path])}
    neuron_env = {**base_env, "PYTHONPATH": os.pathsep.join([str(scratch / "ported"), path]),
                  "ACCEL_BACKEND": "neuron", "ACCEL_NEURON_EMULATE": "1"}  # fmt: skip
    cpu_backend_env = {**neuron_env, "ACCEL_BACKEND": "cpu"}
    del cpu_backend_env["ACCEL_NEURON_EMULATE"]
    if sc.torchrun:
        # torchrun starts the workers; the ported ones select their backend from ACCEL_BACKEND
        run = [PYTHON, "-m", "torch.distributed.run", "--nproc-per-node", str(sc.torchrun), "--master-addr", "127.0.0.1"]
        ports = iter(range(29700 + random.randrange(200) * 3, 29800 + 600))
        original = [*run, "--master-port", str(next(ports)), script, *sc.cpu_args]
        ported = {"cpu": [*run, "--master-port", str(next(ports)), script, *sc.cpu_args],
                  "neuron": [*run, "--master-port", str(next(ports)), script, *sc.neuron_args]}  # fmt: skip
    else:
        original = [PYTHON, script, *sc.cpu_args]
        ported = {"cpu": [PYTHON, "-c", LAUNCH, script, *sc.cpu_args], "neuron": [PYTHON, "-c", LAUNCH, script, *sc.neuron_args]}
    def losses(out: str) -> list[str]:
        found = _losses(sc.loss, out)
        # torchrun's workers print concurrently: each rank's lines in order, the ranks one after another
        return sorted(found, key=lambda line: line.split()[1]) if sc.torchrun else found

    rc1, out1, err1 = _run(original, scratch / "orig", cpu_env, sc.timeout)
    cpu = losses(out1)
    if rc1 != 0 or not cpu:
        return [("any", "failed", f"original on cpu: exit {rc1}: {_error_line(err1)}")]
    verdicts = []
    for name, env in (("cpu", cpu_backend_env), ("neuron", neuron_env)):
        rc, out, err = _run(ported[name], scratch / "ported", env, sc.timeout)
        verdicts.append((name, *_compare(name, cpu, rc, losses(out), err)))
    return verdicts


def run_all(names: list[str] | None = None) -> int:
    print("end to end: original on cpu vs ported on the cpu backend and on emulated neuron (printed losses)")
    identical = ran = same_on_cpu = 0
    chosen = [s for s in SCENARIOS if not names or any(n in s.name for n in names)]
    for sc in chosen:
        with tempfile.TemporaryDirectory(prefix="realcode-e2e-") as tmp:
            verdicts = run_scenario(sc, Path(tmp))
        for backend, verdict, detail in verdicts:
            if backend == "cpu":
                same_on_cpu += verdict == "identical"
            else:
                identical += verdict == "identical" and backend == "neuron"
                ran += verdict != "failed" and backend == "neuron"
            why = f" (expected: {sc.cannot_match})" if sc.cannot_match and verdict == "different" and backend != "cpu" else ""
            print(f"  {sc.name} [{backend}]: {verdict}: {detail}{why}" + (f" [{sc.note}]" if sc.note and backend != "cpu" else ""))
        sys.stdout.flush()
    possible = sum(1 for s in chosen if s.cannot_match is None)
    print(f"ported scripts printing exactly the original's values on the cpu backend: {same_on_cpu}/{len(chosen)}")
    print(f"scripts identical after porting on emulated neuron: {identical}/{possible} where identity is possible; "
          f"{ran}/{len(chosen)} ported scripts ran to the end on emulated neuron")
    return 0


if __name__ == "__main__":
    sys.exit(run_all(sys.argv[1:]))
