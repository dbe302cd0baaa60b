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
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from transformers_tests_tree import ROOT, build, read_sources  # noqa: E402

SOURCES = HERE / "torch_tests_sources.txt"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--git-dir", type=Path, help="a local clone or mirror of pytorch/pytorch holding the commit")
    where.add_argument("--url", help="the repository to clone from (default: the GitHub one of the sources)")
    parser.add_argument("--out", type=Path, help="default: .cache/pytorch-<tag> in this checkout")
    args = parser.parse_args()
    src = read_sources(SOURCES)
    out = args.out or ROOT / ".cache" / f"pytorch-{src.tag}"
    if build(src, list(src.paths), out, args.git_dir, args.url):
        return 1
    print(f"{out}: pytorch {src.tag} ({src.commit[:12]}) test tree\nnow: nox -s torch_tests -- {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
