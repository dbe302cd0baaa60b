"""Testing helpers for backends and for code written against accel-abstraction.

* :mod:`accel_abstraction.testing.conformance`: the conformance kit a plugin runs on its backend.
* :mod:`accel_abstraction.testing.pytest_plugin` (loaded through the ``pytest11`` entry point):
  ``--accel-backend``, the ``accel_backend`` / ``accel_device`` fixtures, ``@pytest.mark.accel``.
* :func:`assert_backends_match` (:mod:`.compare`): run a function under several backends and
  compare the tensors it returns.

pytest imports this package for every test run: keep it cheap (names below load on first use).
"""

# --- compare / pytest plugin names (served lazily: importing this package must stay cheap) ---
_LAZY: dict[str, str] = {
    "assert_backends_match": "compare",
    "BackendResults": "compare",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'accel_abstraction.testing' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
