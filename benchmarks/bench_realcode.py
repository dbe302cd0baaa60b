"""How well do `accel scan` / `accel port` do on real third-party training code?

Not a test: prints figures.  Needs the git-ignored cache of real files (build it with
``python benchmarks/realcode/build_cache.py``; without it this prints how and exits 0).

Scores against hand annotations (``benchmarks/realcode/annotations.tsv``): every coupling
site of the listed files (file, line, category, portable, expected rewrite) and a set of
look-alike lines that must not be reported.

Prints:
- recall: annotated sites with a finding on their line;
- false alarms: findings on any line not annotated as a site, and that count per 200
  look-alike lines;
- portable agreement: sites annotated portable that ``accel port`` rewrites, and
  manual ones it reports as needing a person;
- files that no longer parse after ``accel port`` (and files port refused);
- import order: files that are isort-clean (ruff's ``I`` rules, default settings) before the
  port and still are after it;
- behaviour changed on cpu: files whose original and ported versions, run with the cpu
  backend (:mod:`realcode.differential`: executed as modules, every function callable
  without arguments called), differ in results, errors or printed output;
- with ``--run``: the end-to-end runs of :mod:`realcode.e2e` (original on CPU vs ported on
  emulated neuron, printed losses compared).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from realcode.build_cache import CACHE, Source, sources  # noqa: E402

from accel_abstraction.porting.codemod import port_source  # noqa: E402
from accel_abstraction.porting.runner import read_source  # noqa: E402
from accel_abstraction.porting.scanner import scan_source  # noqa: E402

ANNOTATIONS = HERE / "realcode" / "annotations.tsv"
#: --stub-args: the differential runs also call functions that need arguments (each a stub).
STUB_ARGS = False


@dataclass(frozen=True)
class Site:
    file: str
    line: int
    category: str
    portable: bool
    expected: str


def load_annotations() -> tuple[list[Site], dict[str, set[int]]]:
    sites: list[Site] = []
    lookalikes: dict[str, set[int]] = {}
    for row in ANNOTATIONS.read_text(encoding="utf-8").splitlines():
        if not row.strip() or row.startswith("#"):
            continue
        file, line, category, portable, expected = (row.split("\t") + [""])[:5]
        if category == "lookalike":
            lookalikes.setdefault(file, set()).add(int(line))
        else:
            sites.append(Site(file, int(line), category, portable == "yes", expected))
    return sites, lookalikes


def set_names() -> list[str]:
    """The sets ``sources.tsv`` names, in the order they first appear (``dev``, ``heldout``, ``heldout2``, ...)."""
    return list(dict.fromkeys(s.set for s in sources()))


def score(verbose: bool, only: str | None = None, cpu: bool = True) -> int:
    everything = sources()
    for name in set_names():
        if only is not None and name != only:
            continue
        chosen = [s for s in everything if s.set == name]
        if not all(s.cached.exists() for s in chosen):
            print(f"realcode cache for the {name} set missing under {CACHE}: run python benchmarks/realcode/build_cache.py")
            continue
        tuned = not name.startswith("heldout")
        # a held-out set is blind only until a rule is changed after its score: docs/porting.md says which figures were
        print(f"== {name} set" + (" (the rules were written against it)" if tuned else " (held out: annotated before the scanner ran on it)"))
        score_files(chosen, verbose, cpu)
    return 0


def isort_clean(text: str) -> bool:
    """Whether ruff's import-order rules (``I``, default settings, no configuration read) pass on ``text``.

    Run from an empty folder, as in a user's project: from this repository's root ruff would
    take ``accel_abstraction`` for first-party code and want it in a section of its own.
    """
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="realcode-isort-") as scratch:
        proc = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I", "--stdin-filename", "subject.py", "-"],
            input=text, capture_output=True, text=True, check=False, cwd=scratch,
        )  # fmt: skip
    return proc.returncode == 0


def behaviour_on_cpu(srcs: list[Source], verbose: bool, with_stubs: bool = False) -> None:
    """Run every file's original and ported version with the cpu backend and count the files that differ."""
    from concurrent.futures import ThreadPoolExecutor

    from realcode.differential import compare

    def one(src: Source):  # type: ignore[no-untyped-def]
        text, _ = read_source(src.cached)
        return compare(src.key, text, port_source(text, src.key).output, with_stubs=with_stubs)

    with ThreadPoolExecutor(max_workers=2) as pool:  # each comparison runs two child interpreters
        results = list(pool.map(one, srcs))
    changed = [r for r in results if r.changed]
    print(f"behaviour changed on cpu: {len(changed)} of {len(results)} files "
          f"({sum(r.called for r in results)} functions called{' (arguments stubbed)' if with_stubs else ''}, "
          f"{sum(r.skipped for r in results)} needing arguments not called)")
    now_run = [f"{r.key}:{fn}()" for r in results for fn in r.now_run]
    print(f"calls that raised in the original without CUDA and run after the port: {len(now_run)}"
          + (f" ({', '.join(now_run)})" if now_run else ""))
    from realcode.differential import MESSAGE_WRONG, RAISES_NOW, VALUE_CHANGED

    kinds = [k for r in results for k in r.kinds]
    print("  by kind: " + ", ".join(f"{kind} {kinds.count(kind)}" for kind in (RAISES_NOW, VALUE_CHANGED, MESSAGE_WRONG)))
    for r in changed:
        print(f"  changed on cpu: {r.key}: {r.detail}")
    if verbose:
        for r in results:
            if not r.changed and r.called == 0:
                print(f"  only executed, no function callable without arguments: {r.key}")


def score_files(srcs: list[Source], verbose: bool, cpu: bool = True) -> None:
    keys = {s.key for s in srcs}
    all_sites, all_lookalikes = load_annotations()
    sites = [s for s in all_sites if s.file in keys]
    lookalikes = {k: v for k, v in all_lookalikes.items() if k in keys}
    by_file: dict[str, list[Site]] = {}
    for site in sites:
        by_file.setdefault(site.file, []).append(site)
    found = hit_portable = want_portable = hit_manual = want_manual = 0
    missed: list[str] = []
    alarms: list[str] = []
    alarms_on_lookalikes = 0
    parse_ok = refused = sorted_before = sorted_after = 0
    unsorted: list[str] = []
    misses_by_cat: Counter[str] = Counter()
    lines_total = 0
    for src in srcs:
        text, _ = read_source(src.cached)
        lines_total += text.count("\n")
        result = scan_source(text, src.key)
        if result.error:
            print(f"  scan error: {result.error}")
        annotated = {s.line: s for s in by_file.get(src.key, [])}
        # A finding counts on the annotated line inside its span (multi-line calls), else on its first line.
        on_line: dict[int, list[object]] = {}
        for f in result.findings:
            inside = [n for n in range(f.line, f.end_line + 1) if n in annotated]
            on_line.setdefault(inside[0] if inside else f.line, []).append(f)
        for line, site in annotated.items():
            hits = on_line.get(line, [])
            if hits:
                found += 1
            else:
                missed.append(f"{src.key}:{line} {site.category}")
                misses_by_cat[site.category] += 1
            if site.portable:
                want_portable += 1
                hit_portable += any(getattr(f, "portable", False) for f in hits)
            else:
                want_manual += 1
                hit_manual += any(not getattr(f, "portable", True) for f in hits)
        for line, hits in sorted(on_line.items()):
            if line not in annotated:
                codes = ",".join(sorted({getattr(f, "code", "?") for f in hits}))
                alarms.append(f"{src.key}:{line} {codes}")
                alarms_on_lookalikes += line in lookalikes.get(src.key, set())
        ported = port_source(text, src.key)
        if ported.error:
            refused += 1
            print(f"  port refused: {ported.error}")
        try:
            ast.parse(ported.output)
            parse_ok += 1
        except SyntaxError as exc:
            print(f"  does not parse after port: {src.key}: {exc}")
        if isort_clean(text):
            sorted_before += 1
            if isort_clean(ported.output):
                sorted_after += 1
            else:
                unsorted.append(src.key)
    if cpu:
        behaviour_on_cpu(srcs, verbose, STUB_ARGS)
    n_look = sum(len(v) for v in lookalikes.values())
    repos = len({s.repo for s in srcs})
    print(f"real code: {len(srcs)} files from {repos} repositories, {lines_total} lines; "
          f"{len(sites)} annotated sites, {n_look} annotated look-alike lines")
    print(f"recall: {found}/{len(sites)} = {found / len(sites):.1%}")
    print(f"false alarms: {len(alarms)} ({alarms_on_lookalikes} on annotated look-alikes); "
          f"{200 * len(alarms) / n_look:.2f} per 200 look-alike lines")
    print(f"portable sites rewritten-capable: {hit_portable}/{want_portable}; "
          f"manual sites reported as needing a person: {hit_manual}/{want_manual}")
    print(f"parse after port: {parse_ok}/{len(srcs)} files ({refused} refused by port, left unchanged)")
    print(f"isort-clean after port: {sorted_after}/{sorted_before} files that were clean before"
          + (f" (now unsorted: {', '.join(unsorted)})" if unsorted else ""))
    if misses_by_cat:
        print("missed by category: " + ", ".join(f"{c} {n}" for c, n in misses_by_cat.most_common()))
    if verbose:
        for m in missed:
            print(f"  missed {m}")
        for a in alarms:
            print(f"  false alarm {a}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list every miss and false alarm")
    parser.add_argument("--run", action="store_true", help="also run the end-to-end scripts (minutes)")
    parser.add_argument("--no-cpu", action="store_true", help="skip the differential runs on the cpu backend (minutes)")
    parser.add_argument("--set", choices=set_names(), help="score only this set (tune on dev without looking at held-out)")
    parser.add_argument("--stub-args", action="store_true", help="differential runs also call functions needing arguments, with stubs")
    args = parser.parse_args()
    global STUB_ARGS
    STUB_ARGS = args.stub_args
    code = score(args.verbose, args.set, not args.no_cpu)
    if args.run:
        from realcode.e2e import run_all

        code |= run_all()
    return code


if __name__ == "__main__":
    sys.exit(main())
