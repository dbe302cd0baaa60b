"""Build the PyTorch test tree that ``nox -s torch_tests`` runs, from the commit torch 2.13.0 was built from.

PyTorch's tests are not in its wheel; a clone of the repository is several GB. This takes only
the device-generic test files and what they import (``torch_tests_sources.txt``: the tag, its
commit, the paths), from a sparse, blob-less, depth-1 clone of the tag (``--url``, GitHub by
default) or out of a local clone or mirror that holds the commit (``--git-dir``), and checks
the commit (the helpers are ``transformers_tests_tree.py``'s)::

    python plugins/neuron/tests/scripts/torch_tests_tree.py                       # GitHub
    python plugins/neuron/tests/scripts/torch_tests_tree.py --git-dir ~/src/pytorch/.git

The tree lands in ``.cache/pytorch-<tag>/`` (git-ignored: third-party code is never committed),
whole or not at all. Then::

    nox -s torch_tests -- .cache/pytorch-<tag>

Where no clone can be had, a tree written by hand from the code index's copies at other commits
(``torch_tests_index_copies.txt``: repository, commit, path, characters, SHA-256) is checked with
``--verify-copies TREE``: every listed file present with its size and hash, else named.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from transformers_tests_tree import ROOT, build, read_sources  # noqa: E402

SOURCES = HERE / "torch_tests_sources.txt"
INDEX_COPIES = HERE / "torch_tests_index_copies.txt"


class Copy(NamedTuple):
    """One row of ``torch_tests_index_copies.txt``: a file of ``repo`` at ``commit``, as stored.

    ``excerpt``: an ``excerpt`` row, a file holding verbatim parts of the stored one (its comment
    says which); ``chars`` and ``sha256`` are then the excerpt's.
    """

    repo: str
    commit: str
    path: str
    chars: int
    sha256: str
    excerpt: bool = False


def read_copies(path: Path = INDEX_COPIES) -> list[Copy]:
    """The ``copy`` rows of ``path`` (tab-separated, ``#`` comments); a malformed row is a ValueError."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 6 or fields[0] not in ("copy", "excerpt") or len(fields[2]) != 40 or len(fields[5]) != 64:
            raise ValueError(
                f"{path}:{number}: expected 'copy<TAB>repo<TAB>commit<TAB>path<TAB>chars<TAB>sha256' (or 'excerpt' first)"
            )
        rows.append(Copy(fields[1], fields[2], fields[3], int(fields[4]), fields[5], fields[0] == "excerpt"))
    return rows


def verify_copies(tree: Path, copies: list[Copy]) -> list[str]:
    """What in ``tree`` differs from ``copies`` (missing, other size, other hash), one line each."""
    problems = []
    for row in copies:
        file = tree / row.path
        if not file.is_file():
            problems.append(f"{row.path}: missing (pytorch/pytorch at {row.commit[:12]})")
            continue
        data = file.read_bytes()
        chars = len(data.decode("utf-8"))
        if chars != row.chars or hashlib.sha256(data).hexdigest() != row.sha256:
            kind = "excerpt" if row.excerpt else "copy"
            problems.append(f"{row.path}: {chars} characters, not the listed {kind} at {row.commit[:12]} ({row.chars}); edited, or a test-file patch applied")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--git-dir", type=Path, help="a local clone or mirror of pytorch/pytorch holding the commit")
    where.add_argument("--url", help="the repository to clone from (default: the GitHub one of the sources)")
    parser.add_argument("--out", type=Path, help="default: .cache/pytorch-<tag> in this checkout")
    where.add_argument("--verify-copies", type=Path, metavar="TREE", help="check a hand-written tree against the index copies list")
    args = parser.parse_args()
    if args.verify_copies is not None:
        problems = verify_copies(args.verify_copies, read_copies())
        print("\n".join(problems) or f"{args.verify_copies}: every file of {INDEX_COPIES.name} as listed")
        return 1 if problems else 0
    src = read_sources(SOURCES)
    out = args.out or ROOT / ".cache" / f"pytorch-{src.tag}"
    if build(src, list(src.paths), out, args.git_dir, args.url):
        return 1
    print(f"{out}: pytorch {src.tag} ({src.commit[:12]}) test tree\nnow: nox -s torch_tests -- {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
