"""A pytest plugin that records each test call's thread CPU time in the junit XML.

``torch_suite.py`` loads it in both legs (``-p suite_clock``). Wall time, which the junit XML holds
anyway, is what a team waits for; on a shared machine it also holds the neighbours' load, and two
legs run at once see it differently (single runs of the same code have moved by 0.1-0.15 in the
neuron / CPU ratio). The thread CPU time of the test's call counts only the work the test's own
thread did: every leg computes on one thread (``OMP_NUM_THREADS=1``), and on the emulated device a
backward runs in the thread that asks for it (the emulator's ``autograd_threads``), so the call's
work is all there. ``bench_suite_time.py --clock thread`` sums it.

Each test case gets the property ``thread_cpu_s`` (seconds, the call phase: setup and teardown are
left out on both devices alike).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

#: The junit property name ``bench_suite_time.py`` reads.
PROPERTY = "thread_cpu_s"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    start = time.thread_time()
    yield
    item.user_properties.append((PROPERTY, f"{time.thread_time() - start:.6f}"))
