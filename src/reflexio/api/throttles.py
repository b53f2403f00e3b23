"""Request rate limits per caller, and a brute-force throttle on failed authentications.

Both are kept in the memory of each API process (a load balancer spreads a caller over the
processes, so the effective limit is per process; quotas, which must hold across processes,
live in storage: ``service.quotas``).

* :class:`TokenBuckets`: each caller (an API key, or the local client) has a bucket of
  ``burst`` tokens refilled at ``per_minute / 60`` a second; a request takes one, and a caller
  with none gets a 429 with ``Retry-After``. Off (``per_minute=0``) by default for self-host.
* :class:`AuthThrottle`: after ``max_failures`` failed authentications from one client address
  within ``window_seconds``, that address gets a 429 without its key even being looked up,
  until ``lockout_seconds`` have passed: guessing keys costs real time.

The clock is injectable (``clock``) so tests need not sleep.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from reflexio.errors import RateLimitedError

__all__ = ["AuthThrottle", "TokenBuckets"]

#: Callers (or addresses) remembered at most; the least recently seen are forgotten first.
_MAX_TRACKED: Final = 100_000

Clock = Callable[[], float]


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class TokenBuckets:
    """One token bucket per caller; ``take`` refuses a caller whose bucket is empty."""

    def __init__(self, per_minute: float, burst: int, *, clock: Clock = time.monotonic) -> None:
        self.per_second = per_minute / 60.0
        self.burst = max(1, burst)
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether any limit applies (``per_minute > 0``)."""
        return self.per_second > 0

    def take(self, caller: str) -> None:
        """Spend one token of ``caller``'s bucket.

        Raises:
            RateLimitedError: The bucket is empty; ``retry_after`` is when the next token comes.
        """
        if not self.enabled:
            return
        now = self._clock()
        with self._lock:
            bucket = self._buckets.pop(caller, None) or _Bucket(tokens=float(self.burst), at=now)
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.per_second)
            bucket.at = now
            self._buckets[caller] = bucket
            if len(self._buckets) > _MAX_TRACKED:
                self._buckets.popitem(last=False)
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return
            wait = (1.0 - bucket.tokens) / self.per_second
        raise RateLimitedError(
            f"rate limit of {self.per_second * 60:g} requests per minute reached; retry in {wait:.1f}s",
            details={"limit_per_minute": self.per_second * 60, "burst": self.burst},
            retry_after=wait,
        )


class AuthThrottle:
    """Counts failed authentications per client address and locks out the persistent ones."""

    def __init__(
        self,
        max_failures: int,
        window_seconds: float,
        lockout_seconds: float,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window_seconds = window_seconds
        self.lockout_seconds = lockout_seconds
        self._clock = clock
        self._failures: OrderedDict[str, list[float]] = OrderedDict()
        self._locked_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def check(self, address: str) -> None:
        """Refuse an address that is locked out, before its credentials are looked at.

        Raises:
            RateLimitedError: The address failed too often; ``retry_after`` is when it may try.
        """
        if self.max_failures <= 0:
            return
        now = self._clock()
        with self._lock:
            until = self._locked_until.get(address)
            if until is None:
                return
            if until <= now:
                del self._locked_until[address]
                return
        raise RateLimitedError(
            f"too many failed authentications from this address; retry in {until - now:.0f}s",
            details={"max_failures": self.max_failures, "lockout_seconds": self.lockout_seconds},
            retry_after=until - now,
        )

    def failed(self, address: str) -> None:
        """Record one failed authentication; lock the address out once it failed too often."""
        if self.max_failures <= 0:
            return
        now = self._clock()
        with self._lock:
            recent = [t for t in self._failures.pop(address, []) if now - t < self.window_seconds]
            recent.append(now)
            if len(recent) >= self.max_failures:
                self._locked_until[address] = now + self.lockout_seconds
                recent = []
            self._failures[address] = recent
            if len(self._failures) > _MAX_TRACKED:
                self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        """Forget an address's failures once it authenticated."""
        with self._lock:
            self._failures.pop(address, None)
