"""Limits (filled in below)."""


def patch() -> None:
    return None
