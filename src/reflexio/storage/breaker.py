"""Fail at once while the database is down, and let one call at a time find out it is back.

Without it, every call during an outage waits the whole pool wait (2 s) for a connection that
cannot come: a request that makes three storage calls answers in six seconds, and the waiting
threads pile up until requests time out. With it, the first call that finds the database down
*opens* the breaker; from then on calls fail at once with a ``StorageError`` (a 503 with
``Retry-After``), except one at a time, the *probe*, which tries for real. The probe that gets
a connection closes the breaker, so service resumes as soon as the database answers, with no
restart.

A probe that fails holds off the next one for ``probe_interval`` seconds. Without that pause,
calls queued behind a lock that covers a storage call (an org's search-index catch-up) each
became the probe in turn as the previous one gave up, and each waited the whole pool wait: the
tenth in line answered after ~20 s instead of failing at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from reflexio.errors import StorageError

__all__ = ["Breaker"]


class Breaker:
    """The outage state of one connection pool, shared by every thread that borrows from it.

    Args:
        retry_after: What the refusals tell callers to wait (``Retry-After``).
        probe_interval: How long after a failed probe the next one may start.
        clock: Monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        *,
        retry_after: float,
        probe_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._retry_after = retry_after
        self._probe_interval = probe_interval
        self._clock = clock
        self._down: str | None = None  # why, while open
        self._probing = False
        self._next_probe = 0.0  # no probe before this (clock) time

    @property
    def is_open(self) -> bool:
        """Whether the database was last found down."""
        return self._down is not None

    def admit(self) -> bool:
        """Let a call through; whether it is the probe (its verdict must follow).

        Raises:
            StorageError: The breaker is open and another call is probing, or the last probe
                failed less than ``probe_interval`` ago.
        """
        with self._lock:
            if self._down is None:
                return False
            if self._probing or self._clock() < self._next_probe:
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
            self._next_probe = self._clock() + self._probe_interval
            if probe:
                self._probing = False

    def released(self, probe: bool) -> None:
        """The call is over without a verdict (it failed for another reason)."""
        if probe:
            with self._lock:
                self._probing = False
