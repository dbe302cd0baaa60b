"""(Re)build the git-ignored cache of real third-party code the porting benchmark scores.

Third-party files never enter this repository.  ``sources.tsv`` lists each one (repository,
pinned commit, path, license); this script copies them out of local git mirrors of those
public repositories into ``.cache/realcode/<owner>+<name>/<path>``.

A mirror is a bare git directory holding the pinned commit, found at
``$REALCODE_MIRRORS/<owner>+<name>/repo`` (default ``/work/.mirror``), e.g. one made with
``git clone --bare https://github.com/karpathy/nanoGPT <mirrors>/karpathy+nanoGPT/repo``.

Usage: ``python benchmarks/realcode/build_cache.py`` (prints what it copied or lacks).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOURCES = HERE / "sources.tsv"
CACHE = ROOT / ".cache" / "realcode"


@dataclass(frozen=True)
class Source:
    repo: str
    commit: str
    path: str
    license: str
    kind: str  # "script" (runs as a program) or "module"
    set: str = "dev"  # "dev": the rules were written against it; "heldout", "heldout2", ...: annotated, never tuned on

    @property
    def cached(self) -> Path:
        return CACHE / self.repo.replace("/", "+") / self.path

    @property
    def key(self) -> str:
        """How annotations name the file: ``owner/name:path``."""
        return f"{self.repo}:{self.path}"


def sources() -> list[Source]:
    rows = []
    for line in SOURCES.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append(Source(*line.split("\t")))
    return rows


def build(mirrors: Path) -> int:
    missing = 0
    for src in sources():
        git_dir = mirrors / src.repo.replace("/", "+") / "repo"
        try:
            data = subprocess.run(
                ["git", "--git-dir", str(git_dir), "show", f"{src.commit}:{src.path}"],
                check=True,
                capture_output=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            missing += 1
            print(f"missing {src.key}@{src.commit[:10]}: no mirror at {git_dir} with that commit ({exc})", file=sys.stderr)
            continue
        src.cached.parent.mkdir(parents=True, exist_ok=True)
        src.cached.write_bytes(data)
        print(f"cached {src.key}@{src.commit[:10]} ({src.license})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(build(Path(os.environ.get("REALCODE_MIRRORS", "/work/.mirror"))))
