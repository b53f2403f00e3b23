"""A scripted stand-in for the server: records every request, answers from a table.

Built on ``httpx.MockTransport`` (which serves both the sync and the async client), so the
unit tests exercise the real clients and transports down to the HTTP request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from reflexio import AsyncReflexioClient, ReflexioClient

Answer = httpx.Response | Callable[[httpx.Request], httpx.Response]

NOW = 1_700_000_000

PROFILE = {
    "profile_id": "p1",
    "user_id": "u1",
    "content": "likes light laptops",
    "last_modified_timestamp": NOW,
    "generated_from_request_id": "r1",
    "score": 0.9,
}
USER_PLAYBOOK = {"user_playbook_id": 7, "agent_version": "v1", "request_id": "r1", "content": "be brief"}
AGENT_PLAYBOOK = {"agent_playbook_id": 3, "agent_version": "v1", "content": "cite sources"}
INTERACTION = {"interaction_id": 1, "user_id": "u1", "request_id": "r1", "content": "hi"}
CONFIG = {"storage_config": None, "window_size": 12, "stride_size": 6, "some_future_key": 1}
OPERATION = {
    "service_name": "profile_generation",
    "status": "completed",
    "started_at": NOW,
    "processed_users": 4,
}

PERCENT = {"current": 0.5, "delta_pp": 0.0}
NUMBER = {"current": 1.0, "delta": 0.0}
OVERVIEW = {
    "hero": {"state": "empty", "regular_success_rate_pp": 0.0},
    "context_tiles": {
        "success": PERCENT,
        "behavior_success": PERCENT,
        "corrections": NUMBER,
        "turns": NUMBER,
        "escalation": PERCENT,
    },
    "rule_attribution": [],
    "score_distribution": {"current_bins": [1], "baseline_bins": [0], "labels": ["0"]},
}
IMPACT = {"kind": "agent_playbook", "learning_id": "3", "sessions_served": 4, "hurt": 3}
ACTION = {
    "action_id": 9,
    "kind": "agent_playbook",
    "learning_id": "3",
    "action": "retire",
    "reason": "hurt 3 sessions",
    "created_at": NOW,
}
EXPERIMENT = {"experiment_id": "e/1", "holdout_percentage": 10.0, "started_at": NOW}
EXPERIMENTS = {"active_experiment": EXPERIMENT, "experiments": [EXPERIMENT]}

#: A valid answer body for every route the client calls.
BODIES: dict[tuple[str, str], Any] = {
    ("GET", "/health"): {"status": "healthy", "checks": {}},
    ("GET", "/meta/version"): {"server_version": "0.1.0"},
    ("GET", "/api/whoami"): {"success": True, "org_id": "self-host-org"},
    ("GET", "/api/usage"): {
        "org_id": "self-host-org",
        "plan": "free",
        "period_start": "2026-12-01T00:00:00Z",
        "resets_at": "2027-01-01T00:00:00Z",
        "usage": {"searches": {"used": 3, "limit": 1000, "remaining": 997}},
    },
    ("GET", "/api/get_config"): CONFIG,
    ("POST", "/api/set_config"): {"success": True, "msg": "ok"},
    ("POST", "/api/update_config"): {"success": True, "msg": "ok"},
    ("POST", "/api/clear_user_data"): {"success": True, "deleted_counts": {"profiles": 1}},
    ("GET", "/api/export_user_data"): {"user_id": "u1", "profiles": []},
    ("GET", "/api/jobs"): {"success": True, "jobs": [{"id": 1, "task": "extract", "status": "dead"}]},
    ("POST", "/api/jobs/retry"): {"success": True, "retried_count": 1},
    ("POST", "/api/publish_interaction"): {
        "success": True,
        "request_id": "r1",
        "learning_status": "deferred",
    },
    ("GET", "/api/learning_status"): {"status": "done"},
    ("POST", "/api/finalize_session"): {"success": True, "accepted": True},
    ("POST", "/api/get_interactions"): {"success": True, "interactions": [INTERACTION]},
    ("GET", "/api/get_all_interactions"): {"success": True, "interactions": [INTERACTION]},
    ("POST", "/api/get_requests"): {"success": True, "sessions": []},
    ("POST", "/api/search_interactions"): {"success": True, "interactions": [INTERACTION]},
    ("DELETE", "/api/delete_interaction"): {"success": True},
    ("DELETE", "/api/delete_request"): {"success": True},
    ("DELETE", "/api/delete_session"): {"success": True, "deleted_requests_count": 1},
    ("DELETE", "/api/delete_requests_by_ids"): {"success": True, "deleted_count": 2},
    ("DELETE", "/api/delete_all_interactions"): {"success": True, "deleted_count": 2},
    ("POST", "/api/search"): {
        "success": True,
        "profiles": [PROFILE],
        "user_playbooks": [USER_PLAYBOOK],
        "agent_playbooks": [AGENT_PLAYBOOK],
        "degraded": False,
    },
    ("POST", "/api/add_user_profile"): {"success": True, "added_count": 1},
    ("POST", "/api/get_profiles"): {"success": True, "user_profiles": [PROFILE]},
    ("GET", "/api/get_all_profiles"): {"success": True, "user_profiles": [PROFILE]},
    ("PUT", "/api/update_user_profile"): {"success": True},
    ("POST", "/api/search_profiles"): {"success": True, "user_profiles": [PROFILE]},
    ("GET", "/api/profile_change_log"): {"success": True, "profile_change_logs": []},
    ("GET", "/api/get_profile_statistics"): {"success": True, "current_count": 1},
    ("DELETE", "/api/delete_profile"): {"success": True},
    ("DELETE", "/api/delete_profiles_by_ids"): {"success": True, "deleted_count": 1},
    ("DELETE", "/api/delete_all_profiles"): {"success": True, "deleted_count": 1},
    ("POST", "/api/add_user_playbook"): {"success": True, "added_count": 1},
    ("POST", "/api/add_agent_playbook"): {"success": True, "added_count": 1},
    ("POST", "/api/get_user_playbooks"): {"success": True, "user_playbooks": [USER_PLAYBOOK]},
    ("POST", "/api/get_agent_playbooks"): {"success": True, "agent_playbooks": [AGENT_PLAYBOOK]},
    ("PUT", "/api/update_user_playbook"): {"success": True},
    ("PUT", "/api/update_agent_playbook"): {"success": True},
    ("PUT", "/api/update_agent_playbook_status"): {"success": True},
    ("POST", "/api/search_user_playbooks"): {"success": True, "user_playbooks": [USER_PLAYBOOK]},
    ("POST", "/api/search_agent_playbooks"): {"success": True, "agent_playbooks": [AGENT_PLAYBOOK]},
    ("DELETE", "/api/delete_user_playbook"): {"success": True},
    ("DELETE", "/api/delete_agent_playbook"): {"success": True},
    ("DELETE", "/api/delete_user_playbooks_by_ids"): {"success": True, "deleted_count": 1},
    ("DELETE", "/api/delete_agent_playbooks_by_ids"): {"success": True, "deleted_count": 1},
    ("DELETE", "/api/delete_all_playbooks"): {"success": True, "deleted_count": 2},
    ("DELETE", "/api/delete_all_user_playbooks"): {"success": True, "deleted_count": 1},
    ("DELETE", "/api/delete_all_agent_playbooks"): {"success": True, "deleted_count": 1},
    ("POST", "/api/rerun_profile_generation"): {"success": True},
    ("POST", "/api/manual_profile_generation"): {"success": True},
    ("POST", "/api/upgrade_all_profiles"): {"success": True, "profiles_promoted": 1},
    ("POST", "/api/downgrade_all_profiles"): {"success": True, "profiles_demoted": 1},
    ("POST", "/api/rerun_playbook_generation"): {"success": True},
    ("POST", "/api/manual_playbook_generation"): {"success": True},
    ("POST", "/api/upgrade_all_user_playbooks"): {"success": True},
    ("POST", "/api/downgrade_all_user_playbooks"): {"success": True},
    ("POST", "/api/run_playbook_aggregation"): {"success": True},
    ("POST", "/api/playbook_aggregation_operations"): {"operation_id": "5", "status": "queued"},
    ("GET", "/api/playbook_aggregation_operations/5"): {"operation_id": "5", "status": "succeeded"},
    ("GET", "/api/playbook_aggregation_change_logs"): {"success": True, "change_logs": []},
    ("POST", "/api/get_learning_provenance"): {"kind": "profile", "id": "p1", "provenance_status": "exact"},
    ("POST", "/api/get_agent_playbook_review_queue"): {"success": True, "pending": [], "counts": {}},
    ("GET", "/api/get_operation_status"): {"success": True, "operation_status": OPERATION},
    ("POST", "/api/get_agent_success_evaluation_results"): {
        "success": True,
        "agent_success_evaluation_results": [],
    },
    ("POST", "/api/get_retrieved_learning_evaluation_results"): {"success": True, "results": []},
    ("POST", "/api/session_outcome"): {"success": True, "recorded": True, "outcome_revision": 1},
    ("POST", "/api/get_session_outcomes"): {"success": True, "session_outcomes": []},
    ("POST", "/api/evaluations/grade_on_demand"): {"session_id": "s1", "result_id": 4},
    ("GET", "/api/evaluations/shadow_comparisons/recent"): {"verdicts": []},
    ("POST", "/api/get_evaluation_overview"): OVERVIEW,
    ("POST", "/api/get_playbook_application_stats"): {"success": True, "stats": []},
    ("POST", "/api/get_learning_impact"): {"success": True, "impacts": [IMPACT]},
    ("POST", "/api/get_reflection_actions"): {"success": True, "actions": [ACTION]},
    ("POST", "/api/revert_reflection_action"): {"success": True, "action": ACTION},
    ("GET", "/api/retrieval_experiments"): EXPERIMENTS,
    ("POST", "/api/retrieval_experiments"): EXPERIMENTS,
    ("POST", "/api/retrieval_experiments/stop"): {"experiments": [EXPERIMENT]},
    ("GET", "/api/retrieval_experiments/e/1/results"): {
        "experiment": EXPERIMENT,
        "treatment": {"arm": "treatment"},
        "holdout": {"arm": "holdout"},
    },
}


@dataclass
class FakeServer:
    """Answers each (method, path) from ``answers`` (default: ``BODIES``) and records requests."""

    answers: dict[tuple[str, str], Answer] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = (request.method, request.url.path)
        answer = self.answers.get(key)
        if answer is None:
            if key not in BODIES:
                return httpx.Response(404, json={"detail": "Not Found"})
            return httpx.Response(200, json=BODIES[key])
        return answer(request) if callable(answer) else answer

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def client(self, **kwargs: Any) -> ReflexioClient:
        kwargs.setdefault("url_endpoint", "http://reflexio.test")
        return ReflexioClient(transport=self.transport(), **kwargs)

    def async_client(self, **kwargs: Any) -> AsyncReflexioClient:
        kwargs.setdefault("url_endpoint", "http://reflexio.test")
        return AsyncReflexioClient(transport=self.transport(), **kwargs)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


def body(request: httpx.Request) -> Any:
    """The JSON body of a recorded request (``None`` when it had none)."""
    return json.loads(request.content) if request.content else None
