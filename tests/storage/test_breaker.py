"""The outage breaker: fail at once while the database is down, one probe at a time, paced."""

from __future__ import annotations

import pytest
from tests.support.clock import Clock

from reflexio.errors import StorageError
from reflexio.storage.breaker import Breaker


def test_calls_behind_a_failed_probe_fail_at_once_until_the_interval_passes() -> None:
    """A convoy (calls queued behind a lock) must not become a chain of probes that each wait."""
    clock = Clock()
    breaker = Breaker(retry_after=2.0, probe_interval=1.0, clock=clock)
    assert breaker.admit() is False
    breaker.tripped("down", probe=False)
    with pytest.raises(StorageError):
        breaker.admit()  # just found down: no probe at once either
    clock.now += 1.0
    probe = breaker.admit()
    assert probe is True
    clock.now += 2.0  # the probe waited the pool wait and failed
    breaker.tripped("still down", probe)
    for _ in range(10):  # the calls that queued meanwhile
        with pytest.raises(StorageError) as refused:
            breaker.admit()
        assert refused.value.retry_after == 2.0
    clock.now += 1.0
    assert breaker.admit() is True  # the next probe, once the interval passed
    breaker.connected(True)
    assert not breaker.is_open
    assert breaker.admit() is False


def test_one_probe_at_a_time() -> None:
    breaker = Breaker(retry_after=2.0, probe_interval=0.0, clock=Clock())
    breaker.tripped("down", probe=False)
    assert breaker.admit() is True
    with pytest.raises(StorageError):
        breaker.admit()
    breaker.released(True)
    assert breaker.admit() is True
