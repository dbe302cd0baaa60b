"""How fast is `accel scan` on a large real tree, and `accel port` on a ~9k-line one?

Not a timed test: prints figures. Run ``python benchmarks/bench_scan.py [--repeat N]``.

1. Scans part of torch's own installed Python package (found without importing torch;
   ``--subdir all`` for the whole of it) and compares with bare ``ast.parse`` of the same
   files from the same in-memory text, in interleaved rounds (:mod:`harness`). Files bare ``ast.parse`` rejects
   (newer syntax than this interpreter) are left out of both sides. The target is a
   ratio at or below 1.0: the scanner skips files a cheap text test shows cannot contain
   coupling, and walks the tree once for the rest.
2. Ports a ~9k-line tree built from the test corpus (diff only, nothing written).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

from accel_abstraction.porting.apply import port_file
from accel_abstraction.porting.runner import iter_python_files, read_source
from accel_abstraction.porting.scanner import scan_source

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "porting" / "corpus"


def torch_root() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations)))


def scan_case(root: Path, subdirs: list[str]) -> tuple[harness.Case, str]:
    """``accel scan``'s analysis against bare ``ast.parse`` of the same in-memory files."""
    files = [f for sub in subdirs or ["."] for f in iter_python_files([root / sub])]
    pairs = []
    for path in files:
        text = read_source(path)[0]
        try:
            ast.parse(text)
        except SyntaxError:  # newer syntax than this interpreter: left out of both sides
            continue
        pairs.append((str(path), text))
    lines = sum(text.count("\n") for _, text in pairs)
    where = ", ".join(f"torch/{s}" for s in subdirs) if subdirs else "all of torch"
    case = harness.Case(
        f"scan {where} ({len(pairs)} files, {lines:,} lines)",
        lambda: [scan_source(text, name) for name, text in pairs],
        lambda: [ast.parse(text) for _, text in pairs],
        "ast.parse",
    )
    return case, f"{len(pairs)} files"


def bench_port(target_lines: int = 9000) -> None:
    sources = sorted(CORPUS.glob("*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        total = count = 0
        while total < target_lines:
            for source in sources:
                dest = Path(tmp, f"pkg{count // 50}", f"{source.stem}_{count}.py")
                dest.parent.mkdir(exist_ok=True)
                shutil.copyfile(source, dest)
                total += source.read_text(encoding="utf-8").count("\n")
                count += 1
        files = list(iter_python_files([Path(tmp)]))
        t0 = time.perf_counter()
        sites = changed = 0
        for path in files:
            result = port_file(path)
            sites += len(result.applied)
            changed += result.changed
        port_s = time.perf_counter() - t0
    print(f"port: {len(files)} files, {total:,} lines, {sites} sites rewritten in {changed} files")
    print(f"  {port_s:.2f} s  ({total / port_s:,.0f} lines/s, diff only)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--subdir", action="append", help="torch subpackages to scan (default: distributed and _dynamo; 'all' for everything)"
    )
    parser.add_argument("--no-port", action="store_true", help="skip the accel port timing")
    harness.add_common_args(parser, rounds=5)
    args = parser.parse_args()
    harness.setup_threads(args.threads)
    subdirs = [] if args.subdir == ["all"] else (args.subdir or ["distributed", "_dynamo"])
    case, _ = scan_case(torch_root(), subdirs)
    results = harness.compare_calls([case], args.rounds, args.budget, args.seed)
    harness.print_results("accel scan vs bare ast.parse (target <= 1.0)", results, args.threads)
    if args.json:
        harness.write_json(args.json, "scan", results, args.threads)
    if not args.no_port:
        bench_port()


if __name__ == "__main__":
    main()
