"""How fast is `accel scan` on a large real tree, and `accel port` on a ~9k-line one?

Not a timed test: prints figures. Run ``python benchmarks/bench_scan.py [--repeat N]``.

1. Scans torch's own installed Python package (found without importing torch) and
   compares with bare ``ast.parse`` of the same files, in the same run, from the same
   in-memory text (file reading is timed separately). Files bare ``ast.parse`` rejects
   (newer syntax than this interpreter) are left out of both sides. The target is a
   ratio at or below 1.0: the scanner skips files a cheap text test shows cannot contain
   coupling, and walks the tree once for the rest.
2. Also times the scan through the process pool, as ``accel scan`` runs it, from disk.
3. Ports a ~9k-line tree built from the test corpus (diff only, nothing written).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import shutil
import tempfile
import time
from pathlib import Path

from accel_abstraction.porting.apply import port_file
from accel_abstraction.porting.runner import iter_python_files, read_source, scan_paths
from accel_abstraction.porting.scanner import scan_source

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "porting" / "corpus"


def torch_root() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations)))


def bench_scan(repeat: int) -> None:
    root = torch_root()
    files = list(iter_python_files([root]))
    t0 = time.perf_counter()
    texts = [read_source(path)[0] for path in files]
    read_s = time.perf_counter() - t0
    pairs = []
    for path, text in zip(files, texts, strict=True):
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        pairs.append((str(path), text))
    lines = sum(text.count("\n") for _, text in pairs)
    print(f"torch package: {root}")
    print(f"  {len(pairs)} files ({len(files) - len(pairs)} left out: newer syntax), {lines:,} lines; reading took {read_s:.2f} s")

    # Interleaved per file (alternating which goes first), so both sides see the same
    # machine load: this box is shared, and a load change between two long loops would
    # otherwise decide the ratio.
    best_parse = best_scan = float("inf")
    findings = skipped = 0
    clock = time.perf_counter
    for _ in range(repeat):
        parse_s = scan_s = 0.0
        findings = skipped = 0
        for i, (name, text) in enumerate(pairs):
            if i % 2:
                t0 = clock()
                ast.parse(text)
                t1 = clock()
                result = scan_source(text, name)
                t2 = clock()
                parse_s += t1 - t0
                scan_s += t2 - t1
            else:
                t0 = clock()
                result = scan_source(text, name)
                t1 = clock()
                ast.parse(text)
                t2 = clock()
                scan_s += t1 - t0
                parse_s += t2 - t1
            findings += len(result.findings)
            skipped += result.skipped
        best_parse = min(best_parse, parse_s)
        best_scan = min(best_scan, scan_s)
    n = len(pairs)
    print(f"  bare ast.parse : {best_parse:7.2f} s  {n / best_parse:8.0f} files/s")
    print(f"  accel scan     : {best_scan:7.2f} s  {n / best_scan:8.0f} files/s  "
          f"({skipped} files skipped by the text pre-check, {findings} findings)")
    print(f"  ratio scan / ast.parse = {best_scan / best_parse:.2f}  (target <= 1.0)")

    jobs = os.cpu_count() or 1
    t0 = time.perf_counter()
    results = scan_paths(files, jobs=jobs)
    pool_s = time.perf_counter() - t0
    print(f"  from disk, {jobs} worker process(es): {pool_s:.2f} s  {len(results) / pool_s:.0f} files/s")


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="best of N for the scan/parse comparison")
    parser.add_argument("--skip-scan", action="store_true", help="only the port timing")
    parser.add_argument("--skip-port", action="store_true", help="only the scan timings")
    args = parser.parse_args()
    if not args.skip_scan:
        bench_scan(args.repeat)
    if not args.skip_port:
        bench_port()


if __name__ == "__main__":
    main()
