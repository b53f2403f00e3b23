"""One user's data: exported whole, cleared whole (search indexes included)."""

from __future__ import annotations

from starlette.testclient import TestClient

from reflexio.filters import LearningFilter
from reflexio.records import Audit, EvaluationRecord, LearningKind, LearningStatus
from reflexio.service.core import Core
from tests.api.support import agent_playbook, failed, ok, profile, publish_body, user_playbook


def seed(client: TestClient, core: Core, user: str) -> None:
    body = publish_body(
        f"{user} needs wheelchair access", user_id=user, session_id=f"{user}-s", request_id=f"{user}-r"
    )
    body["interaction_data_list"][0]["citations"] = [{"kind": "profile", "real_id": "x"}]
    ok(client.post("/api/publish_interaction", json=body))
    ok(
        client.post(
            "/api/add_user_profile",
            json={"user_profiles": [profile(f"{user}-p", "needs wheelchair access", user_id=user)]},
        )
    )
    ok(
        client.post(
            "/api/add_user_playbook",
            json={"user_playbooks": [user_playbook("check step-free routes", user_id=user)]},
        )
    )
    core.storage.add_evaluations(
        [
            EvaluationRecord(
                org_id="self-host-org",
                kind="session",
                user_id=user,
                session_id=f"{user}-s",
                agent_version="v1",
                result={"is_success": True},
            )
        ]
    )


def test_export_holds_everything_of_the_user_in_every_state(client: TestClient, core: Core) -> None:
    seed(client, core, "u1")
    seed(client, core, "u2")
    ok(client.post("/api/add_agent_playbook", json={"agent_playbooks": [agent_playbook("shared rule")]}))
    where = LearningFilter(kinds=(LearningKind.PROFILE,), profile_ids=("u1-p",))
    core.storage.update_learnings("self-host-org", where, {"status": LearningStatus.SUPERSEDED}, Audit())
    export = ok(client.get("/api/export_user_data", params={"user_id": "u1"}))
    assert export["user_id"] == "u1" and export["format_version"] == 1
    assert [r["request_id"] for r in export["requests"]] == ["u1-r"]
    assert export["interactions"][0]["content"] == "u1 needs wheelchair access"
    assert export["interactions"][0]["citations"][0]["real_id"] == "x"
    assert [(p["profile_id"], p["status"]) for p in export["profiles"]] == [("u1-p", "superseded")]
    assert [p["content"] for p in export["user_playbooks"]] == ["check step-free routes"]
    assert export["agent_success_evaluation_results"][0]["is_success"] is True
    assert {e["event"] for e in export["learning_history"]} >= {"created", "superseded"}
    assert "u2" not in str(export) and "shared rule" not in str(export)
    failed(client.get("/api/export_user_data", params={"user_id": ""}), 422)
    failed(client.get("/api/export_user_data"), 422)


def test_clear_removes_everything_of_the_user_and_only_that(client: TestClient, core: Core) -> None:
    seed(client, core, "u1")
    seed(client, core, "u2")
    body = ok(client.post("/api/clear_user_data", json={"user_id": "u1"}))
    counts = body["deleted_counts"]
    assert counts["requests"] == 1 and counts["interactions"] == 1
    assert counts["profiles"] == 1 and counts["user_playbooks"] == 1 and counts["evaluations"] == 1
    export = ok(client.get("/api/export_user_data", params={"user_id": "u1"}))
    assert not any(
        export[k] for k in ("requests", "interactions", "profiles", "user_playbooks", "learning_history")
    )
    assert not export["agent_success_evaluation_results"]
    query = {"query": "wheelchair access", "user_id": "u1", "threshold": 0.0}
    hits = ok(client.post("/api/search", json=query))
    assert hits["profiles"] == [] and all(p["user_id"] == "u2" for p in hits["user_playbooks"])
    assert ok(client.get("/api/export_user_data", params={"user_id": "u2"}))["profiles"]
    failed(client.post("/api/clear_user_data", json={"user_id": " "}), 422)
