"""A settable clock for code that takes one (``clock=``): tests move time instead of sleeping."""

from __future__ import annotations


class Clock:
    """Returns ``now`` until a test changes it."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
