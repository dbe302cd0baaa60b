"""Testing helpers for backends and for code written against accel-abstraction.

* :mod:`accel_abstraction.testing.conformance`: the conformance kit a plugin runs on its backend.
* :mod:`accel_abstraction.testing.pytest_plugin` (loaded through the ``pytest11`` entry point):
  ``--accel-backend``, the ``accel_backend`` / ``accel_device`` fixtures, ``@pytest.mark.accel``.
* :func:`assert_backends_match` (:mod:`.compare`): run a function under several backends and
  compare the tensors it returns.

pytest imports this package for every test run: keep it cheap (names below load on first use).
"""

from .._lazy import lazy_getattr

# --- compare / pytest plugin names (served lazily: importing this package must stay cheap) ---
_LAZY: dict[str, str] = {
    "assert_backends_match": "compare",
    "BackendResults": "compare",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
