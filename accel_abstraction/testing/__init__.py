"""Testing helpers for backends and for code written against accel-abstraction.

* :mod:`accel_abstraction.testing.conformance`: the conformance kit a plugin runs on its backend.
"""
