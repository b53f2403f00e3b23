"""Client methods of evaluation: outcomes, grading, the overview, impact, reflection, experiments.

Each function is the body of the client method of the same name (see ``_transport``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import quote

from reflexio.client._transport import Call, Plan, build, dump, parse_as, single
from reflexio.models import (
    GetEvaluationOverviewRequest,
    GetEvaluationOverviewResponse,
    GetLearningImpactRequest,
    GetLearningImpactResponse,
    GetPlaybookApplicationStatsRequest,
    GetPlaybookApplicationStatsResponse,
    GetRecentShadowComparisonsResponse,
    GetSessionOutcomesRequest,
    GetSessionOutcomesResponse,
    GradeOnDemandRequest,
    GradeOnDemandResponse,
    ListReflectionActionsRequest,
    ListReflectionActionsResponse,
    RetrievalExperimentListResponse,
    RetrievalExperimentResultsResponse,
    RevertReflectionActionRequest,
    RevertReflectionActionResponse,
    SetSessionOutcomeRequest,
    SetSessionOutcomeResponse,
    StartRetrievalExperimentRequest,
    StopRetrievalExperimentRequest,
)

__all__ = [
    "get_evaluation_overview",
    "get_learning_impact",
    "get_playbook_application_stats",
    "get_reflection_actions",
    "get_retrieval_experiment_results",
    "get_session_outcomes",
    "grade_on_demand",
    "list_retrieval_experiments",
    "list_shadow_comparisons",
    "mark_session_outcome",
    "revert_reflection_action",
    "start_retrieval_experiment",
    "stop_retrieval_experiment",
]

LearningKind = Literal["profile", "user_playbook", "agent_playbook"]


def mark_session_outcome(
    *,
    session_id: str,
    outcome: Literal["success", "failure", "unknown"],
    occurred_at: int,
    label: str | None = None,
    value: float | None = None,
    metadata: Mapping[str, Any] | None = None,
    user_id: str | None = None,
) -> Plan[SetSessionOutcomeResponse]:
    """Tell Reflexio how a session really ended (it outranks any judge).

    Reporting again records a new revision; the latest wins and the history is kept.

    Raises:
        NotFoundError: Nothing was published in this session.
        ConflictError: Several users share the session id; pass ``user_id``.
    """
    req = SetSessionOutcomeRequest.model_validate(
        {
            "session_id": session_id,
            "outcome": outcome,
            "occurred_at": occurred_at,
            "label": label,
            "value": value,
            "metadata": dict(metadata) if metadata is not None else None,
            "user_id": user_id,
        }
    )
    return single(Call("POST", "/api/session_outcome", parse_as(SetSessionOutcomeResponse), json=dump(req)))


def get_session_outcomes(
    request: GetSessionOutcomesRequest | Mapping[str, Any] | None = None,
    *,
    session_ids: list[str] | None = None,
    user_id: str | None = None,
    outcome: str | None = None,
    label: str | None = None,
    start_time: int | None = None,
    end_time: int | None = None,
    top_k: int | None = None,
    offset: int | None = None,
    include_history: bool | None = None,
) -> Plan[GetSessionOutcomesResponse]:
    """Each session's latest reported outcome (every revision with ``include_history``)."""
    req = build(
        GetSessionOutcomesRequest,
        request,
        session_ids=session_ids,
        user_id=user_id,
        outcome=outcome,
        label=label,
        start_time=start_time,
        end_time=end_time,
        top_k=top_k,
        offset=offset,
        include_history=include_history,
    )
    return single(
        Call("POST", "/api/get_session_outcomes", parse_as(GetSessionOutcomesResponse), json=dump(req))
    )


def grade_on_demand(*, session_id: str, agent_version: str) -> Plan[GradeOnDemandResponse]:
    """Judge one session now (answered from a 24 h cache while it has no new turn)."""
    req = GradeOnDemandRequest(session_id=session_id, agent_version=agent_version)
    return single(
        Call("POST", "/api/evaluations/grade_on_demand", parse_as(GradeOnDemandResponse), json=dump(req))
    )


def list_shadow_comparisons(limit: int = 10) -> Plan[GetRecentShadowComparisonsResponse]:
    """The latest per-turn verdicts of regular vs shadow answers."""
    return single(
        Call(
            "GET",
            "/api/evaluations/shadow_comparisons/recent",
            parse_as(GetRecentShadowComparisonsResponse),
            params={"limit": limit},
        )
    )


def get_evaluation_overview(
    request: GetEvaluationOverviewRequest | Mapping[str, Any] | None = None,
    *,
    from_ts: int | None = None,
    to_ts: int | None = None,
    bucket: Literal["day", "week"] | None = None,
    include_shadow: bool | None = None,
) -> Plan[GetEvaluationOverviewResponse]:
    """Success rates regular vs shadow, corrections, escalations and rule attribution."""
    req = build(
        GetEvaluationOverviewRequest,
        request,
        from_ts=from_ts,
        to_ts=to_ts,
        bucket=bucket,
        include_shadow=include_shadow,
    )
    return single(
        Call("POST", "/api/get_evaluation_overview", parse_as(GetEvaluationOverviewResponse), json=dump(req))
    )


def get_playbook_application_stats(days_back: int = 30) -> Plan[GetPlaybookApplicationStatsResponse]:
    """Per learning cited or injected in the window: how often, and its impact."""
    req = GetPlaybookApplicationStatsRequest(days_back=days_back)
    return single(
        Call(
            "POST",
            "/api/get_playbook_application_stats",
            parse_as(GetPlaybookApplicationStatsResponse),
            json=dump(req),
        )
    )


def get_learning_impact(
    kind: LearningKind | None = None, learning_ids: list[str] | None = None, limit: int = 100
) -> Plan[GetLearningImpactResponse]:
    """Exposures, outcome counts and effect intervals of learnings (the most served without ids)."""
    req = GetLearningImpactRequest(kind=kind, learning_ids=learning_ids, limit=limit)
    return single(
        Call("POST", "/api/get_learning_impact", parse_as(GetLearningImpactResponse), json=dump(req))
    )


def get_reflection_actions(
    kind: LearningKind | None = None,
    learning_id: str | None = None,
    *,
    include_reverted: bool = True,
    limit: int = 100,
) -> Plan[ListReflectionActionsResponse]:
    """What reflection did to learnings, why, on what evidence, and whether it was reverted."""
    req = ListReflectionActionsRequest(
        kind=kind, learning_id=learning_id, include_reverted=include_reverted, limit=limit
    )
    return single(
        Call("POST", "/api/get_reflection_actions", parse_as(ListReflectionActionsResponse), json=dump(req))
    )


def revert_reflection_action(action_id: int, note: str | None = None) -> Plan[RevertReflectionActionResponse]:
    """Undo a reflection action.

    Raises:
        ConflictError: It was already reverted, or the learning moved since.
    """
    req = RevertReflectionActionRequest(action_id=action_id, note=note)
    return single(
        Call(
            "POST", "/api/revert_reflection_action", parse_as(RevertReflectionActionResponse), json=dump(req)
        )
    )


def list_retrieval_experiments() -> Plan[RetrievalExperimentListResponse]:
    """The active retrieval experiment and every past one."""
    return single(Call("GET", "/api/retrieval_experiments", parse_as(RetrievalExperimentListResponse)))


def start_retrieval_experiment(
    experiment_id: str, holdout_percentage: float
) -> Plan[RetrievalExperimentListResponse]:
    """Start a user-level holdout (409 while another runs or for a reused id)."""
    req = StartRetrievalExperimentRequest(experiment_id=experiment_id, holdout_percentage=holdout_percentage)
    return single(
        Call("POST", "/api/retrieval_experiments", parse_as(RetrievalExperimentListResponse), json=dump(req))
    )


def stop_retrieval_experiment(experiment_id: str) -> Plan[RetrievalExperimentListResponse]:
    """Stop the active experiment."""
    req = StopRetrievalExperimentRequest(experiment_id=experiment_id)
    return single(
        Call(
            "POST",
            "/api/retrieval_experiments/stop",
            parse_as(RetrievalExperimentListResponse),
            json=dump(req),
        )
    )


def get_retrieval_experiment_results(experiment_id: str) -> Plan[RetrievalExperimentResultsResponse]:
    """Per-arm metrics and the lift with a 95 % interval clustered by user.

    The id is percent-encoded into the path (an id may hold ``/`` or ``?``).
    """
    return single(
        Call(
            "GET",
            f"/api/retrieval_experiments/{quote(experiment_id, safe='')}/results",
            parse_as(RetrievalExperimentResultsResponse),
        )
    )
