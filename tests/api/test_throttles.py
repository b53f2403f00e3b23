"""Per-caller rate limits and a brute-force throttle on failed authentications (issue 16, plans)."""

from __future__ import annotations

from typing import Any

import pytest

from reflexio.api.throttles import AuthThrottle, TokenBuckets
from reflexio.errors import RateLimitedError
from reflexio.service import keys
from reflexio.service.core import Core
from tests.api.support import failed, make_client, ok
from tests.support.clock import Clock


def test_a_bucket_allows_its_burst_then_refills_at_its_rate() -> None:
    clock = Clock()
    buckets = TokenBuckets(per_minute=60, burst=3, clock=clock)
    for _ in range(3):
        buckets.take("key:a")
    with pytest.raises(RateLimitedError) as refused:
        buckets.take("key:a")
    assert refused.value.retry_after == pytest.approx(1.0)
    buckets.take("key:b")  # callers do not share a bucket
    clock.now += 1.0
    buckets.take("key:a")


def test_no_limit_is_the_default() -> None:
    buckets = TokenBuckets(per_minute=0, burst=1)
    for _ in range(1_000):
        buckets.take("local")


def test_repeated_failures_lock_an_address_out_for_a_while() -> None:
    clock = Clock()
    throttle = AuthThrottle(max_failures=3, window_seconds=60, lockout_seconds=300, clock=clock)
    for _ in range(3):
        throttle.check("203.0.113.7")
        throttle.failed("203.0.113.7")
    with pytest.raises(RateLimitedError) as refused:
        throttle.check("203.0.113.7")
    assert refused.value.retry_after == pytest.approx(300)
    throttle.check("198.51.100.1")  # another address is not affected
    clock.now += 301
    throttle.check("203.0.113.7")


def test_failures_outside_the_window_do_not_add_up() -> None:
    clock = Clock()
    throttle = AuthThrottle(max_failures=3, window_seconds=10, lockout_seconds=300, clock=clock)
    for _ in range(5):
        throttle.failed("a")
        clock.now += 6
    throttle.check("a")


def test_an_over_limit_caller_gets_429_with_retry_after(app: Any) -> None:
    app.state.rate_limits = TokenBuckets(per_minute=60, burst=2)
    client = make_client(app)
    ok(client.get("/api/whoami"))
    ok(client.get("/api/whoami"))
    response = client.get("/api/whoami")
    body = failed(response, 429)
    assert body["error"] == "rate_limited" and int(response.headers["retry-after"]) >= 1
    app.state.rate_limits = TokenBuckets(per_minute=0, burst=1)


def test_guessing_keys_is_throttled(app: Any, core: Core) -> None:
    _, real = keys.create_key(core, "org-a")
    app.state.auth_throttle = AuthThrottle(max_failures=3, window_seconds=60, lockout_seconds=60)
    guesser = make_client(app, peer=("203.0.113.7", 4000), key="rfx_" + "x" * 40)
    for _ in range(3):
        failed(guesser.get("/api/whoami"), 401)
    body = failed(guesser.get("/api/whoami"), 429)
    assert "failed authentications" in body["detail"]
    # even the right key is refused from that address until the lockout ends
    failed(make_client(app, peer=("203.0.113.7", 4001), key=real).get("/api/whoami"), 429)
    ok(make_client(app, peer=("198.51.100.1", 4000), key=real).get("/api/whoami"))
    app.state.auth_throttle = AuthThrottle(max_failures=10, window_seconds=60, lockout_seconds=300)
