"""The org's background jobs: listed, dead ones listed and retried."""

from __future__ import annotations

from starlette.testclient import TestClient

from reflexio.service.core import Core
from tests.api.support import failed, ok, publish_body


def kill_all(core: Core) -> None:
    """Lease every due job and let it fail for good, as a worker out of attempts would."""
    for job in core.storage.claim_jobs("w", limit=100, lease_seconds=60):
        core.storage.finish_job(job.id, "w", error="LLM key rejected")


def test_publish_queues_jobs_that_can_be_listed(client: TestClient) -> None:
    out = ok(client.post("/api/publish_interaction", json=publish_body("hello", request_id="r1")))
    jobs = ok(client.get("/api/jobs"))["jobs"]
    assert jobs and all(j["request_id"] == out["request_id"] for j in jobs)
    assert {j["status"] for j in jobs} == {"queued"}
    assert ok(client.get("/api/jobs", params={"status": "dead"}))["jobs"] == []
    assert ok(client.get("/api/jobs", params={"request_id": "other"}))["jobs"] == []
    failed(client.get("/api/jobs", params={"status": "zombie"}), 422)


def test_dead_jobs_are_listed_and_retried(client: TestClient, core: Core) -> None:
    ok(client.post("/api/publish_interaction", json=publish_body("hello", force_extraction=True)))  # due now
    kill_all(core)
    dead = ok(client.get("/api/jobs/dead"))["jobs"]
    assert dead and all(j["last_error"] == "LLM key rejected" for j in dead)
    body = ok(client.post("/api/jobs/retry", json={"job_ids": [dead[0]["id"]]}))
    assert body["retried_count"] == 1
    assert ok(client.post("/api/jobs/retry", json={}))["retried_count"] == len(dead) - 1
    assert ok(client.get("/api/jobs/dead"))["jobs"] == []
