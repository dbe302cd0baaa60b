"""``accel run`` reaches child processes: an environment variable plus a start-up hook.

While ``accel run`` runs its target, :func:`propagate` sets ``ACCEL_REDIRECT`` (the backend,
the options and a directory for the children's reports) and puts the ``bootstrap``
directory, holding a ``sitecustomize.py``, first on ``PYTHONPATH``. Every Python child
started from then on (``torchrun`` workers, ``torch.multiprocessing.spawn``, ``spawn``
DataLoader workers, ``subprocess.run([sys.executable, ...])``), and their children,
install the same redirect as soon as they import torch (:func:`install_in_child`) and
write their call sites to that directory at exit; :func:`collect` merges them into the
parent's report. Both variables are restored when the run ends. Children started with
``fork`` inherit the parent's installed redirect; their sites are not collected (a forked
child leaves through ``os._exit``, without exit handlers).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from ..environment import read
from .sites import _RANK, Site

__all__ = ["ENV", "collect", "install_in_child", "merge", "propagate"]

ENV = "ACCEL_REDIRECT"
BOOTSTRAP = str(Path(__file__).resolve().parent / "bootstrap")


@contextlib.contextmanager
def propagate(backend: str, allow_missing: bool) -> Iterator[str]:
    """Redirect the Python children started inside the block; yield the directory of their reports."""
    _remove_stale_sites_dirs()
    sites_dir = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
    _mark(sites_dir)
    saved = {key: os.environ.get(key) for key in (ENV, "PYTHONPATH")}
    os.environ[ENV] = json.dumps({"backend": backend, "allow_missing": allow_missing, "sites_dir": sites_dir})
    old = saved["PYTHONPATH"]
    os.environ["PYTHONPATH"] = BOOTSTRAP + (os.pathsep + old if old else "")
    try:
        yield sites_dir
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_PREFIX = "accel-run-"
#: In each report folder ``accel run`` makes: who made it (``{"uid": ..., "pid": ...}``). Only a
#: folder holding it, owned by this user and naming a process that is gone, is ever deleted.
MARKER = "accel-run.owner"


def _mark(sites_dir: str) -> None:
    with open(os.path.join(sites_dir, MARKER), "x", encoding="utf-8") as fh:
        json.dump({"tool": "accel run", "uid": os.getuid(), "pid": os.getpid()}, fh)


def _made_by_a_dead_run(path: Path) -> bool:
    """Whether ``path`` is a report folder a killed ``accel run`` of this user left: a real folder
    owned by this user, with a marker that this user owns and that names the process of the
    folder's name, which is gone. Anything else (another user's folder, a look-alike name)
    is not ours to delete."""
    from ..safe_io import process_alive

    pid = path.name[len(_PREFIX) :].split("-", 1)[0]
    uid = os.getuid()
    try:
        folder = os.lstat(path)
        marker = os.lstat(path / MARKER)
        if not (stat.S_ISDIR(folder.st_mode) and stat.S_ISREG(marker.st_mode)):
            return False
        if folder.st_uid != uid or marker.st_uid != uid or marker.st_size > 4096:
            return False
        owner = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(owner, dict)
        and owner.get("uid") == uid
        and pid.isdigit()
        and owner.get("pid") == int(pid)
        and not process_alive(int(pid))
    )


def _remove_stale_sites_dirs() -> None:
    """Delete the report folders of this user's ``accel run`` processes that were killed
    (``accel-run-PID-*`` in the temporary folder, :func:`_made_by_a_dead_run`)."""
    base = Path(tempfile.gettempdir())
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if name.startswith(_PREFIX) and _made_by_a_dead_run(base / name):
            shutil.rmtree(base / name, ignore_errors=True)


def install_in_child() -> None:
    """Install the redirect described by ``ACCEL_REDIRECT`` in this process; report its sites at exit."""
    from ..runtime import use
    from .context import redirect_cuda

    raw = read(ENV)
    assert raw is not None, "install_in_child runs only under ACCEL_REDIRECT (sitecustomize checks it)"
    config = json.loads(raw)
    backend = use(config["backend"])
    redirect = redirect_cuda(backend, allow_missing=bool(config["allow_missing"]))
    atexit.register(_write_sites, redirect, config["sites_dir"])


def _write_sites(redirect: object, sites_dir: str) -> None:
    from .context import redirect_cuda

    assert isinstance(redirect, redirect_cuda)
    sites = [s.__dict__ for s in redirect.sites()]
    if not sites or not os.path.isdir(sites_dir):
        return
    path = os.path.join(sites_dir, f"{os.getpid()}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(sites, fh)
    os.replace(path + ".tmp", path)


def collect(sites_dir: str) -> tuple[list[Site], int]:
    """The sites the children wrote to ``sites_dir`` and how many children wrote; removes the directory."""
    sites: list[Site] = []
    processes = 0
    try:
        for name in sorted(os.listdir(sites_dir)):
            if name.endswith(".json"):
                with open(os.path.join(sites_dir, name), encoding="utf-8") as fh:
                    sites.extend(Site(**row) for row in json.load(fh))
                processes += 1
    except (OSError, ValueError, TypeError):
        pass  # a child killed while writing: its sites are lost, the run's result is not
    shutil.rmtree(sites_dir, ignore_errors=True)
    return sites, processes


def merge(*groups: Sequence[Site]) -> list[Site]:
    """Sites of several processes as one list: counts of the same (file, line, api) added, the worst status kept."""
    merged: dict[tuple[str, int, str], Site] = {}
    for group in groups:
        for s in group:
            if not s.file.startswith("<"):  # a child may name the same script relatively or absolutely
                s = replace(s, file=os.path.abspath(s.file))
            key = (s.file, s.line, s.api)
            old = merged.get(key)
            if old is None:
                merged[key] = s
            else:
                status = s.status if _RANK[s.status] > _RANK[old.status] else old.status
                merged[key] = Site(s.file, s.line, s.function, s.api, s.category, status, old.count + s.count, s.hint)
    return sorted(merged.values(), key=lambda s: (s.file, s.line, s.api))
