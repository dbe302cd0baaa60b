"""Build the transformers test tree that ``nox -s transformers_tests`` runs, from a pinned release tag.

transformers' model tests are not in its wheel, and its PyPI sdist holds only the top-level
``tests/*.py``; a clone of the whole repository is about 1.3 GB. This takes only what the
model tests need (``transformers_tests_sources.txt``: the tag, its commit, the paths), from
a sparse, blob-less, depth-1 clone of the tag (``--url``, GitHub by default), or out of a
local clone or mirror that holds the commit (``--git-dir``), and checks the commit::

    python plugins/neuron/tests/scripts/transformers_tests_tree.py                  # GitHub
    python plugins/neuron/tests/scripts/transformers_tests_tree.py --git-dir ~/src/transformers/.git
    python plugins/neuron/tests/scripts/transformers_tests_tree.py --model qwen3    # + tests/models/qwen3

The tree lands in ``.cache/transformers-<tag>/`` (git-ignored: third-party code is never
committed), whole or not at all (built beside it, then renamed). Then::

    nox -s transformers_tests -- .cache/transformers-<tag>
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
SOURCES = HERE / "transformers_tests_sources.txt"


@dataclass(frozen=True)
class Sources:
    """What ``transformers_tests_sources.txt`` pins: the repository, its release tag, that tag's commit and
    the test paths a tree needs."""

    repo: str
    tag: str
    commit: str
    paths: tuple[str, ...]


def read_sources(path: Path = SOURCES) -> Sources:
    """The tag, commit and paths of ``path`` (tab-separated ``key value`` lines, ``#`` comments)."""
    fields: dict[str, list[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, value = line.partition("\t")
        if not sep or not value:
            raise SystemExit(f"{path}:{number}: expected 'key<TAB>value', got {line!r}")
        fields.setdefault(key, []).append(value)
    try:
        return Sources(fields["repo"][0], fields["tag"][0], fields["commit"][0], tuple(fields["path"]))
    except KeyError as missing:
        raise SystemExit(f"{path}: no {missing.args[0]!r} line") from None


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed:\n{done.stderr.strip()}")
    return done.stdout


def _pathspec(path: str) -> str:
    return f":(glob){path}" if "*" in path else path


def from_git_dir(git_dir: Path, src: Sources, paths: list[str], into: Path) -> None:
    """Extract ``paths`` at ``src.commit`` from the local repository ``git_dir`` into ``into``."""
    _git("--git-dir", str(git_dir), "cat-file", "-e", f"{src.commit}^{{commit}}")
    archive = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "archive", src.commit, "--", *map(_pathspec, paths)],
        stdout=subprocess.PIPE,
    )
    untar = subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout)
    if archive.wait() != 0 or untar.returncode != 0:
        raise SystemExit(f"extracting {src.commit} from {git_dir} failed")


def from_clone(url: str, src: Sources, paths: list[str], into: Path) -> None:
    """A sparse, blob-less, depth-1 clone of ``src.tag`` from ``url``, checked out with ``paths`` only."""
    _git("clone", "--quiet", "--depth", "1", "--filter=blob:none", "--no-checkout", "--branch", src.tag, url, str(into))
    head = _git("rev-parse", "HEAD", cwd=into).strip()
    if head != src.commit:
        raise SystemExit(f"{url} tag {src.tag} is {head}, not {src.commit} as the sources list says")
    _git("sparse-checkout", "set", "--no-cone", *[f"/{p}" for p in paths], cwd=into)
    _git("checkout", "--quiet", src.tag, cwd=into)


def build(src: Sources, paths: list[str], out: Path, git_dir: Path | None = None, url: str | None = None) -> int:
    """Build the tree of ``paths`` at ``src.commit`` into ``out``, whole or not at all; 1 if ``out`` exists."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        print(f"{out} exists; remove it to build it again", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        if git_dir is not None:
            from_git_dir(git_dir, src, paths, work)
        else:
            shutil.rmtree(work)  # git clone wants to create it
            from_clone(url or f"https://github.com/{src.repo}", src, paths, work)
        missing = [p for p in paths if "*" not in p and not (work / p).exists()]
        if missing:
            raise SystemExit(f"not at {src.tag}: {', '.join(missing)}")
        work.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--git-dir", type=Path, help="a local clone or mirror holding the pinned commit")
    where.add_argument("--url", help="the repository to clone from (default: the GitHub one of the sources)")
    parser.add_argument("--model", action="append", default=[], help="also tests/models/MODEL (repeatable)")
    parser.add_argument("--out", type=Path, help="default: .cache/transformers-<tag> in this checkout")
    args = parser.parse_args()
    src = read_sources()
    paths = [*src.paths, *(f"tests/models/{m}" for m in args.model)]
    out = args.out or ROOT / ".cache" / f"transformers-{src.tag}"
    if build(src, paths, out, args.git_dir, args.url):
        return 1
    print(f"{out}: transformers {src.tag} ({src.commit[:12]}) test tree\nnow: nox -s transformers_tests -- {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
