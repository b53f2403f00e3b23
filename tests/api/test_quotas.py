"""Quotas over HTTP: a search past the plan's quota is a 429 with ``Retry-After`` and a body
naming the quota and its reset; ``GET /api/usage`` shows use against limits (issue 16)."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.testclient import TestClient

from reflexio.models.plans import Plan, PlanLimits
from reflexio.service import quotas
from reflexio.service.core import Core
from tests.api.support import failed, ok

ORG = "self-host-org"  # what the loopback client without a key acts as
AT = datetime(2026, 12, 31, 23, 0, tzinfo=UTC).timestamp()


def test_a_search_past_the_quota_is_a_429_with_retry_after_until_the_reset(
    client: TestClient, core: Core
) -> None:
    core.clock = lambda: AT
    quotas.set_plan(core, ORG, Plan(name="custom", limits=PlanLimits(searches=1)))
    ok(client.post("/api/search", json={"query": "laptop", "user_id": "u1"}))
    refused = client.post("/api/search_user_playbooks", json={"query": "laptop"})
    body = failed(refused, 429)
    assert refused.headers["Retry-After"] == "3600"
    assert body["error"] == "quota_exceeded"
    assert body["details"]["quota"] == "searches" and body["details"]["resets_at"] == "2027-01-01T00:00:00Z"
    assert "resets at 2027-01-01T00:00:00Z" in body["message"]


def test_usage_shows_each_quota_against_the_plan(client: TestClient, core: Core) -> None:
    core.clock = lambda: AT
    quotas.set_plan(core, ORG, Plan(name="custom", limits=PlanLimits(searches=10)))
    ok(client.post("/api/search", json={"query": "laptop", "user_id": "u1"}))
    report = ok(client.get("/api/usage"))
    assert report["org_id"] == ORG and report["plan"] == "custom"
    assert report["usage"]["searches"] == {"used": 1, "limit": 10, "remaining": 9}
    assert report["usage"]["input_tokens"] == {"used": 0}  # no limit: unlimited (nulls are left out)
    assert report["resets_at"].startswith("2027-01-01T00:00:00")
    assert report["learning_status"] == "active"


def test_the_usage_route_is_in_the_openapi_document(client: TestClient) -> None:
    paths = ok(client.get("/openapi.json"))["paths"]
    assert "get" in paths["/api/usage"]
    assert "429" in paths["/api/search"]["post"]["responses"]
