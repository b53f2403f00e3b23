"""Fail at once while the database is down, and let one call at a time find out it is back.

Without it, every call during an outage waits the whole pool wait (2 s) for a connection that
cannot come: a request that makes three storage calls answers in six seconds, and the waiting
threads pile up until requests time out. With it, the first call that finds the database down
*opens* the breaker; from then on calls fail at once with a ``StorageError`` (a 503 with
``Retry-After``), except one at a time, the *probe*, which tries for real. The probe that gets
a connection closes the breaker, so service resumes as soon as the database answers, with no
restart and no timer.
"""

from __future__ import annotations

import threading

from reflexio.errors import StorageError

__all__ = ["Breaker"]


class Breaker:
    """The outage state of one connection pool, shared by every thread that borrows from it.

    Args:
        retry_after: What the refusals tell callers to wait (``Retry-After``).
    """

    def __init__(self, *, retry_after: float) -> None:
        self._lock = threading.Lock()
        self._retry_after = retry_after
        self._down: str | None = None  # why, while open
        self._probing = False

    @property
    def is_open(self) -> bool:
        """Whether the database was last found down."""
        return self._down is not None

    def admit(self) -> bool:
        """Let a call through; whether it is the probe (its verdict must follow).

        Raises:
            StorageError: The breaker is open and another call is probing.
        """
        with self._lock:
            if self._down is None:
                return False
            if self._probing:
                raise StorageError(f"PostgreSQL is unavailable: {self._down}", retry_after=self._retry_after)
            self._probing = True
            return True

    def connected(self, probe: bool) -> None:
        """The call got a working connection: the database answers."""
        with self._lock:
            self._down = None
            if probe:
                self._probing = False

    def tripped(self, reason: str, probe: bool) -> None:
        """The call found the database down: open (or keep open) the breaker."""
        with self._lock:
            self._down = reason
            if probe:
                self._probing = False

    def released(self, probe: bool) -> None:
        """The call is over without a verdict (it failed for another reason)."""
        if probe:
            with self._lock:
                self._probing = False
