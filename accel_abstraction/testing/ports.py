"""A TCP port for a test's process group or launcher: free on 127.0.0.1 when asked.

Tests never use fixed ports: two suites on one machine (CI and a developer's run, two nox
sessions) would meet on them, and a rendezvous that finds the port taken fails or aborts.
"""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (bind to port 0, read it, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
