"""No route lets one org read, change or delete another org's data.

Org A is seeded with a bit of everything; then org B, with its own key, calls each route
aimed at A's ids, users, sessions and secrets. For every call: B's response shows nothing of
A's, counts nothing of A's, and A's stored state is exactly what it was before. The case
table must name every ``/api`` route of the app (``test_every_api_route_has_an_isolation_case``),
so a new route cannot ship without its isolation check.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import pytest
from starlette.testclient import TestClient

from reflexio.filters import InteractionFilter, LearningFilter, RequestFilter
from reflexio.models import RerunProfileGenerationRequest
from reflexio.records import (
    Audit,
    EvaluationRecord,
    Learning,
    LearningKind,
    LearningStatus,
    ReflectionActionRecord,
)
from reflexio.service import generation, keys
from reflexio.service.core import Core
from tests.api.support import agent_playbook, make_client, ok, profile, publish_body, user_playbook

A, B = "org-a", "org-b"
MARK = "ALPHAMARK"  # only in A's content; B never sends it
SECRET = "sk-alpha-0123456789abcdef"
A_NAMES = ("alpha-user", "alpha-req", "alpha-sess", "alpha-prof")
CONTENT = f"Zanzibar pineapple harvest schedule {MARK}"
QUERY = "Zanzibar pineapple harvest"


@dataclass(frozen=True)
class Ids:
    """A's numeric ids, known only after seeding."""

    interaction: int
    user_playbook: int
    agent_playbook: int
    dead_job: int
    reflection_action: int
    aggregation_operation: str


@dataclass(frozen=True)
class Case:
    """One call B makes: ``request(ids)`` returns (query params, JSON body)."""

    method: str
    path: str
    status: int = 200
    params: Callable[[Ids], dict[str, Any]] = field(default=lambda ids: {})
    body: Callable[[Ids], Any] | None = None
    name: str = ""
    path_params: Callable[[Ids], dict[str, str]] = field(default=lambda ids: {})

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}{' ' + self.name if self.name else ''}"


def _c(
    method: str,
    path: str,
    status: int = 200,
    body: Any = None,
    params: Any = None,
    name: str = "",
    path_params: dict[str, str] | Callable[[Ids], dict[str, str]] | None = None,
) -> Case:
    wrap = (lambda value: lambda ids: value) if not callable(body) and body is not None else None
    return Case(
        method=method,
        path=f"/api/{path}",
        status=status,
        params=params or (lambda ids: {}),
        body=wrap(body) if wrap else body,
        name=name,
        path_params=path_params if callable(path_params) else (lambda ids: path_params or {}),
    )


ALPHA_USER = {"user_id": "alpha-user"}
CASES = [
    _c("GET", "whoami"),
    _c("GET", "usage"),
    _c("GET", "events", params=lambda ids: {"after": "0", "follow": "false"}),
    _c(
        "GET",
        "events",
        params=lambda ids: {"after": "0", "follow": "false", "user_id": "alpha-user"},
        name="user",
    ),
    _c(
        "POST",
        "publish_interaction",
        body=publish_body("B's own turn", user_id="alpha-user", request_id="alpha-req"),
    ),
    _c("GET", "learning_status", 404, params=lambda ids: {"request_id": "alpha-req"}),
    _c("POST", "finalize_session", body={"user_id": "alpha-user", "session_id": "alpha-sess"}),
    _c("POST", "get_interactions", body=ALPHA_USER),
    _c("GET", "get_all_interactions"),
    _c("POST", "get_requests", body={"session_id": "alpha-sess"}),
    _c("POST", "search_interactions", body={**ALPHA_USER, "query": QUERY}),
    _c(
        "DELETE",
        "delete_interaction",
        404,
        body=lambda ids: {**ALPHA_USER, "interaction_id": ids.interaction},
    ),
    _c("DELETE", "delete_request", 404, body={"request_id": "alpha-req"}),
    _c("DELETE", "delete_session", 404, body={"session_id": "alpha-sess"}),
    _c("DELETE", "delete_requests_by_ids", body={"request_ids": ["alpha-req"]}),
    _c("DELETE", "delete_all_interactions"),
    _c(
        "POST",
        "add_user_profile",
        body={"user_profiles": [profile("alpha-prof", "B's fact", user_id="alpha-user")]},
    ),
    _c("POST", "get_profiles", body=ALPHA_USER),
    _c("GET", "get_all_profiles"),
    _c(
        "GET",
        "get_all_profiles",
        params=lambda ids: {"user_id": "alpha-user", "include_tombstones": "true"},
        name="scoped",
    ),
    _c(
        "PUT",
        "update_user_profile",
        404,
        body={**ALPHA_USER, "profile_id": "alpha-prof", "content": "changed"},
    ),
    _c("POST", "search_profiles", body={**ALPHA_USER, "query": QUERY, "threshold": 0.0}),
    _c("GET", "profile_change_log"),
    _c("GET", "get_profile_statistics"),
    _c("DELETE", "delete_profile", 404, body={**ALPHA_USER, "profile_id": "alpha-prof"}),
    _c("DELETE", "delete_profile", body={**ALPHA_USER, "search_query": QUERY}, name="by query"),
    _c("DELETE", "delete_profiles_by_ids", body={"profile_ids": ["alpha-prof"]}),
    _c("DELETE", "delete_all_profiles"),
    _c(
        "POST",
        "add_user_playbook",
        body={"user_playbooks": [user_playbook("B's rule", user_id="alpha-user")]},
    ),
    _c("POST", "add_agent_playbook", body={"agent_playbooks": [agent_playbook("B's agent rule")]}),
    _c("POST", "get_user_playbooks", body=lambda ids: {"user_playbook_id": ids.user_playbook}),
    _c("POST", "get_user_playbooks", body={**ALPHA_USER, "query": QUERY}, name="by query"),
    _c("POST", "get_agent_playbooks", body=lambda ids: {"agent_playbook_id": ids.agent_playbook}),
    _c(
        "PUT",
        "update_user_playbook",
        404,
        body=lambda ids: {"user_playbook_id": ids.user_playbook, "content": "x"},
    ),
    _c(
        "PUT",
        "update_agent_playbook",
        404,
        body=lambda ids: {"agent_playbook_id": ids.agent_playbook, "content": "x"},
    ),
    _c(
        "PUT",
        "update_agent_playbook_status",
        404,
        body=lambda ids: {"agent_playbook_id": ids.agent_playbook, "playbook_status": "rejected"},
    ),
    _c("POST", "search_user_playbooks", body={"query": QUERY, "threshold": 0.0}),
    _c("POST", "search_agent_playbooks", body={"query": QUERY, "threshold": 0.0}),
    _c("DELETE", "delete_user_playbook", 404, body=lambda ids: {"user_playbook_id": ids.user_playbook}),
    _c("DELETE", "delete_agent_playbook", 404, body=lambda ids: {"agent_playbook_id": ids.agent_playbook}),
    _c("DELETE", "delete_user_playbooks_by_ids", body=lambda ids: {"user_playbook_ids": [ids.user_playbook]}),
    _c(
        "DELETE",
        "delete_agent_playbooks_by_ids",
        body=lambda ids: {"agent_playbook_ids": [ids.agent_playbook]},
    ),
    _c("DELETE", "delete_all_playbooks"),
    _c("DELETE", "delete_all_user_playbooks"),
    _c("DELETE", "delete_all_agent_playbooks"),
    _c("POST", "search", body={"query": QUERY, **ALPHA_USER, "session_id": "alpha-sess", "threshold": 0.0}),
    _c(
        "POST",
        "get_learning_provenance",
        404,
        body=lambda ids: {"kind": "user_playbook", "id": str(ids.user_playbook)},
    ),
    _c("POST", "get_learning_provenance", 404, body={"kind": "profile", "id": "alpha-prof"}, name="profile"),
    _c("POST", "set_config", body={"window_size": 20, "stride_size": 5}),
    _c(
        "POST",
        "set_config",
        422,
        body={"api_key_config": {"openai": {"api_key": "****cdef"}}},
        name="with A's mask",
    ),
    _c("POST", "update_config", body={"search_threshold": 0.9}),
    _c("GET", "get_config"),
    _c("POST", "clear_user_data", body=ALPHA_USER),
    _c("GET", "export_user_data", params=lambda ids: ALPHA_USER),
    _c("GET", "jobs"),
    _c("GET", "jobs", params=lambda ids: {"request_id": "alpha-req"}, name="by request"),
    _c("GET", "jobs/dead"),
    _c("POST", "jobs/retry", body=lambda ids: {"job_ids": [ids.dead_job]}),
    _c("POST", "jobs/retry", body={}, name="all"),
    _c("POST", "rerun_profile_generation", body=ALPHA_USER),  # A's running rerun is not B's
    _c("POST", "manual_profile_generation", body=ALPHA_USER),
    _c("POST", "upgrade_all_profiles", 409, body={**ALPHA_USER, "profile_ids": ["alpha-pending"]}),
    _c("POST", "downgrade_all_profiles", 409, body=ALPHA_USER),
    _c("POST", "rerun_playbook_generation", body={"agent_version": "v1"}),
    _c("POST", "manual_playbook_generation", body={"agent_version": "v1"}),
    _c("POST", "upgrade_all_user_playbooks", 409, body={"agent_version": "v1"}),
    _c("POST", "downgrade_all_user_playbooks", 409, body={}),
    _c("GET", "get_operation_status"),
    _c("POST", "run_playbook_aggregation", body={"agent_version": "v1"}),  # B's own scope
    _c("POST", "playbook_aggregation_operations", 202, body={"agent_version": "v1"}),
    _c(
        "GET",
        "playbook_aggregation_operations/{operation_id}",
        404,
        path_params=lambda ids: {"operation_id": ids.aggregation_operation},
    ),
    _c(
        "GET",
        "playbook_aggregation_change_logs",
        params=lambda ids: {"agent_version": "v1", "playbook_name": "playbook"},
    ),
    _c("POST", "get_agent_playbook_review_queue", body={}),
    _c("POST", "get_agent_success_evaluation_results", body={}),
    _c("POST", "get_retrieved_learning_evaluation_results", body={}),
    _c(
        "POST",
        "session_outcome",
        404,
        body={"session_id": "alpha-sess", "outcome": "failure", "occurred_at": 1},
    ),
    _c("POST", "get_session_outcomes", body={"session_ids": ["alpha-sess"], "include_history": True}),
    _c("GET", "evaluations/shadow_comparisons/recent"),
    _c("POST", "get_evaluation_overview", body={"from_ts": 0, "to_ts": 4_000_000_000}),
    _c("POST", "evaluations/grade_on_demand", 200, body={"session_id": "alpha-sess", "agent_version": "v1"}),
    _c("POST", "get_playbook_application_stats", body={"days_back": 30}),
    _c(
        "POST",
        "get_learning_impact",
        body=lambda ids: {"kind": "agent_playbook", "learning_ids": [str(ids.agent_playbook)]},
    ),
    _c("POST", "get_learning_impact", body={}, name="most exposed"),
    _c("POST", "get_reflection_actions", body={}),
    _c("POST", "revert_reflection_action", 404, body=lambda ids: {"action_id": ids.reflection_action}),
    _c("GET", "retrieval_experiments"),
    _c("POST", "retrieval_experiments", body={"experiment_id": "alpha-exp", "holdout_percentage": 10}),
    _c("POST", "retrieval_experiments/stop", 409, body={"experiment_id": "alpha-exp"}),
    _c(
        "GET",
        "retrieval_experiments/{experiment_id}/results",
        404,
        path_params={"experiment_id": "alpha-exp"},
    ),
]


def seed_org_a(core: Core, app: Any) -> Ids:
    """Give org A one of everything, through A's own key."""
    _, key = keys.create_key(core, A, "a", reviewer=True)
    a = make_client(app, key=key)
    ok(
        a.post(
            "/api/publish_interaction",
            json=publish_body(CONTENT, user_id="alpha-user", session_id="alpha-sess", request_id="alpha-req"),
        )
    )
    ok(
        a.post(
            "/api/add_user_profile",
            json={"user_profiles": [profile("alpha-prof", CONTENT, user_id="alpha-user")]},
        )
    )
    ok(
        a.post(
            "/api/add_user_playbook", json={"user_playbooks": [user_playbook(CONTENT, user_id="alpha-user")]}
        )
    )
    ok(
        a.post(
            "/api/add_agent_playbook",
            json={"agent_playbooks": [agent_playbook(CONTENT, playbook_status="approved")]},
        )
    )
    secret_config = {
        "api_key_config": {
            "openai": {"api_key": SECRET},
            "custom_endpoint": {
                "model": "m",
                "api_key": SECRET,
                "api_base": f"https://alpha:{SECRET}@alpha-db/v1",
            },
        },
    }
    ok(a.post("/api/set_config", json=secret_config))
    assert core.storage.expedite_job(A, "extract", "alpha-user"), "the publish queued an extraction job"
    [job, *_] = core.storage.claim_jobs("w", limit=1, lease_seconds=60)
    core.storage.finish_job(job.id, "w", error=f"failed on {MARK}")
    rows = core.storage.get_learnings(A, LearningFilter())
    by_kind = {r.kind: r.id for r in rows}
    [turn] = core.storage.list_interactions(A, InteractionFilter())
    seed_versions(core)
    ok(
        a.post(
            "/api/session_outcome", json={"session_id": "alpha-sess", "outcome": "failure", "occurred_at": 1}
        )
    )
    ok(a.post("/api/retrieval_experiments", json={"experiment_id": "alpha-exp", "holdout_percentage": 10}))
    submitted = a.post("/api/playbook_aggregation_operations", json={"agent_version": "v1"})
    assert submitted.status_code == 202, submitted.text
    operation = submitted.json()
    (action,) = core.storage.add_reflection_actions(
        [
            ReflectionActionRecord(
                org_id=A,
                learning_id=by_kind[LearningKind.AGENT_PLAYBOOK],
                kind="agent_playbook",
                action="retire",
                reason=f"hurt three sessions {MARK}",
                evidence={"hurt": 3},
            )
        ]
    )
    return Ids(
        interaction=turn.id,
        user_playbook=by_kind[LearningKind.USER_PLAYBOOK],
        agent_playbook=by_kind[LearningKind.AGENT_PLAYBOOK],
        dead_job=job.id,
        reflection_action=action.id,
        aggregation_operation=str(operation["operation_id"]),
    )


def seed_versions(core: Core) -> None:
    """A's pending and archived learnings and a queued rerun, for the generation routes."""
    versions = [
        Learning(
            org_id=A,
            kind=kind,
            user_id="alpha-user",
            content=CONTENT,
            status=status,
            agent_version=agent_version,
        )
        for kind, agent_version in ((LearningKind.PROFILE, ""), (LearningKind.USER_PLAYBOOK, "v1"))
        for status in (LearningStatus.PENDING, LearningStatus.ARCHIVED)
    ]
    versions[0].profile_id = "alpha-pending"
    core.storage.save_learnings(versions, Audit(actor="seed"))
    generation.rerun_profile_generation(core, A, RerunProfileGenerationRequest(user_id="alpha-user"))
    verdict = {"is_success": False, "failure_reason": CONTENT, "agent_version": "v1"}
    core.storage.add_evaluations(
        [
            EvaluationRecord(
                org_id=A,
                kind="session",
                user_id="alpha-user",
                session_id="alpha-sess",
                agent_version="v1",
                result=verdict,
            ),
            EvaluationRecord(
                org_id=A,
                kind="learning",
                user_id="alpha-user",
                session_id="alpha-sess",
                learning_kind="profile",
                learning_id="alpha-prof",
                result={"relevance_reason": CONTENT, "agent_version": "v1"},
            ),
        ]
    )


def state_of(core: Core, org_id: str) -> dict[str, Any]:
    """Everything stored for an org that a route could read, change or delete."""
    s = core.storage
    return {
        "learnings": [r.snapshot() for r in s.get_learnings(org_id, LearningFilter())],
        "requests": [asdict(r) for r in s.list_requests(org_id, RequestFilter(), limit=1_000)],
        "interactions": [asdict(r) for r in s.list_interactions(org_id, InteractionFilter())],
        "events": [e.id for e in s.list_events(org_id, limit=1_000)],
        "stream": [e.seq for e in s.list_stream_events(org_id, after=0)],
        "config": s.get_org_config(org_id),
        "jobs": [(j.id, j.status, j.run_at, j.attempts, j.payload) for j in s.list_jobs(org_id, limit=1_000)],
        "exposures": s.list_exposures(org_id, "alpha-sess"),
        "bookmarks": s.get_bookmark(org_id, "alpha-user", "profile"),
        "outcomes": s.list_outcomes(org_id, latest_only=False, limit=1_000),
        "reflection_actions": s.list_reflection_actions(org_id),
    }


def nothing_of_a(body: Any, sent: str) -> None:
    """B's response carries no content, secret or name of A's that B did not send itself."""
    text = json.dumps(body)
    assert MARK not in text and SECRET not in text and "alpha-db" not in text, text
    for name in A_NAMES:
        assert name in sent or name not in text, (name, text)
    if isinstance(body, dict):  # B's deletes, retries and statistics count nothing of A's
        counts = [v for k, v in body.items() if k.endswith("_count") and k != "added_count"]
        assert not any([*counts, *body.get("deleted_counts", {}).values()]), text


def _answer(response: Any) -> Any:
    """The JSON body, or the events of a Server-Sent Events stream (their ``data`` lines)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
    return response.json()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_org_b_cannot_reach_org_a(core: Core, app: Any, case: Case) -> None:
    ids = seed_org_a(core, app)
    _, key_b = keys.create_key(core, B, "b", reviewer=True)  # isolation, not review rights, is tested
    before = state_of(core, A)
    body = case.body(ids) if case.body else None
    params = case.params(ids)
    path_params = case.path_params(ids)
    url = case.path.format(**path_params)
    response = make_client(app, key=key_b).request(case.method, url, params=params, json=body)
    assert response.status_code == case.status, response.text
    nothing_of_a(_answer(response), json.dumps([body, params, path_params]))
    assert state_of(core, A) == before
    if case.path in ("/api/whoami", "/api/usage"):
        assert response.json()["org_id"] == B


def test_every_api_route_has_an_isolation_case(client: TestClient) -> None:
    schema = ok(client.get("/openapi.json"))
    served = {
        (method.upper(), path)
        for path, ops in schema["paths"].items()
        if path.startswith("/api/")
        for method in ops
    }
    covered = {(c.method, c.path) for c in CASES}
    assert served - covered == set(), "routes without an isolation case"
    assert covered - served == set(), "isolation cases for routes that do not exist"
