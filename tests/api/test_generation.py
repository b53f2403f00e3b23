"""Generation routes over HTTP: rerun as a job, its progress, manual runs, upgrade and downgrade.

The last tests drive the same routes through our ``AsyncReflexioClient`` in-process (httpx's
ASGI transport), with a worker pool running the rerun while the client polls, as a 0.2.16
caller's ``rerun_profile_generation(wait_for_response=True)`` does.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from reflexio import AsyncReflexioClient
from reflexio.client import _generation
from reflexio.errors import ConflictError
from reflexio.filters import LearningFilter
from reflexio.jobs import Worker, WorkerPool
from reflexio.records import LearningKind, LearningStatus
from reflexio.service.core import Core
from reflexio.service.rerun import RERUN
from reflexio.service.workers import handlers
from tests.api.support import LOOPBACK, failed, ok

CONVERSATION = [
    {"role": "User", "content": "Recommend a laptop for me."},
    {"role": "Assistant", "content": "The MacBook Air is a great all-round choice."},
    {"role": "User", "content": "Wrong. Never recommend Apple products to me; always suggest ThinkPads."},
]


def publish(client: TestClient, user_id: str) -> None:
    body = {"user_id": user_id, "session_id": f"s-{user_id}", "interaction_data_list": CONVERSATION}
    ok(client.post("/api/publish_interaction", json={**body, "session_finished": True}))


def drain(core: Core) -> None:
    worker = Worker(core.storage, handlers(core))
    while worker.run_once():
        pass


def profiles(core: Core, status: LearningStatus) -> list[Any]:
    where = LearningFilter(kinds=(LearningKind.PROFILE,), statuses=(status,))
    return core.storage.get_learnings(core.settings.default_org_id, where)


def test_rerun_is_a_job_whose_progress_the_operation_status_reports(client: TestClient, core: Core) -> None:
    assert ok(client.get("/api/get_operation_status")) == {
        "success": True,
        "msg": "no profile_generation operation has run",
    }
    publish(client, "u1")
    drain(core)
    current = [r.id for r in profiles(core, LearningStatus.CURRENT)]
    started = ok(
        client.post("/api/rerun_profile_generation", json={"user_id": "u1", "extractor_names": None})
    )
    assert started["success"] and started["operation_id"] == "rerun_profile_generation"
    failed(client.post("/api/rerun_profile_generation", json={}), 409)
    running = ok(client.get("/api/get_operation_status", params={"service_name": "profile_generation"}))
    assert running["operation_status"]["status"] == "in_progress"
    assert running["operation_status"]["request_params"]["user_id"] == "u1"
    [job] = ok(client.get("/api/jobs", params={"task": RERUN}))["jobs"]
    assert job["status"] == "queued"
    drain(core)
    done = ok(client.get("/api/get_operation_status"))["operation_status"]
    assert (
        done["status"] == "completed" and done["processed_users"] == 1 and done["progress_percentage"] == 100
    )
    assert [r.id for r in profiles(core, LearningStatus.CURRENT)] == current and profiles(
        core, LearningStatus.PENDING
    )
    assert ok(client.get("/api/get_operation_status", params={"service_name": "playbook_generation"})) == {
        "success": True,
        "msg": "no playbook_generation operation has run",
    }
    failed(client.get("/api/get_operation_status", params={"service_name": "nope"}), 422)


def test_upgrade_and_downgrade_routes(client: TestClient, core: Core) -> None:
    failed(client.post("/api/upgrade_all_profiles", json={}), 409)
    failed(client.post("/api/downgrade_all_profiles", json={}), 409)
    publish(client, "u1")
    drain(core)
    ok(client.post("/api/rerun_profile_generation", json={}))
    queued = failed(client.post("/api/upgrade_all_profiles", json={}), 409)  # the rerun has not run
    assert "rerun is still in progress" in queued["detail"] and queued["details"]["job_id"]
    drain(core)
    pending = len(profiles(core, LearningStatus.PENDING))
    up = ok(client.post("/api/upgrade_all_profiles", json={"only_affected_users": True}))
    assert up["success"] and up["profiles_promoted"] == pending and up["profiles_archived"] >= 1
    down = ok(client.post("/api/downgrade_all_profiles", json={"user_id": "u1"}))
    assert down["profiles_restored"] == up["profiles_archived"] and down["profiles_demoted"] == pending


def test_playbook_routes(client: TestClient, core: Core) -> None:
    publish(client, "u1")  # agent_version defaults to agent-v0
    drain(core)
    started = ok(client.post("/api/rerun_playbook_generation", json={"agent_version": ""}))
    assert started["operation_id"] == "rerun_playbook_generation"
    drain(core)
    status = ok(client.get("/api/get_operation_status", params={"service_name": "playbook_generation"}))
    assert status["operation_status"]["status"] == "completed"
    assert status["operation_status"]["request_params"]["agent_version"] == "agent-v0"
    up = ok(client.post("/api/upgrade_all_user_playbooks", json={"agent_version": "agent-v0"}))
    assert up["user_playbooks_promoted"] >= 1
    down = ok(client.post("/api/downgrade_all_user_playbooks", json={}))
    assert down["user_playbooks_demoted"] == up["user_playbooks_promoted"]
    failed(client.post("/api/upgrade_all_user_playbooks", json={"playbook_name": "none"}), 409)
    manual = ok(client.post("/api/manual_playbook_generation", json={}))
    assert manual["success"] and "1 user" in manual["msg"]
    manual = ok(client.post("/api/manual_profile_generation", json={"user_id": "nobody"}))
    assert "0 user" in manual["msg"]
    failed(client.post("/api/rerun_profile_generation", json={"start_time": 20, "end_time": 10}), 422)


def test_the_client_waits_for_a_rerun_and_moves_versions(
    app: Any, core: Core, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_generation, "POLL_SECONDS", 0.05)
    pool = WorkerPool(core.storage, handlers(core), size=1, poll_seconds=0.02)
    transport = httpx.ASGITransport(app=app, client=LOOPBACK)

    async def scenario() -> None:
        async with AsyncReflexioClient(url_endpoint="http://127.0.0.1", transport=transport) as client:
            for user in ("u1", "u2"):
                await client.publish_interaction(user, CONVERSATION, session_id=f"s-{user}")
            await client.manual_profile_generation()
            pool.start()
            result = await client.rerun_profile_generation(wait_for_response=True)
            assert result is not None and result.success and result.profiles_generated == 2, result
            assert result.msg == "Profile generation completed"
            status = await client.get_operation_status("profile_generation")
            assert status.operation_status is not None and status.operation_status.total_users == 2
            up = await client.upgrade_profiles()
            assert up.profiles_promoted == len(profiles(core, LearningStatus.CURRENT)) > 0
            down = await client.downgrade_profiles()
            assert down.profiles_demoted == up.profiles_promoted
            played = await client.rerun_playbook_generation(wait_for_response=True)
            assert played is not None and played.success and played.playbooks_generated == 2
            assert (await client.upgrade_user_playbooks()).user_playbooks_promoted > 0
            assert (await client.downgrade_user_playbooks()).user_playbooks_demoted > 0
            await client.manual_playbook_generation()
            with pytest.raises(ConflictError):
                await client.upgrade_user_playbooks(agent_version="nope")

    try:
        asyncio.run(scenario())
    finally:
        pool.stop(grace_seconds=5)
