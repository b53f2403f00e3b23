"""Evaluation routes: session outcomes, shadow comparisons, the overview, grading on demand,
application stats and (our additions) learning impact and reflection actions.

Thin over ``service``: every route validates its body with the wire model (a 422 names the
field), calls one service function and returns its response model.
"""

from __future__ import annotations

from fastapi import Query

from reflexio.api.auth import CallerDep, CoreDep, require_reviewer
from reflexio.api.routes import api_router, documented
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
    RevertReflectionActionRequest,
    RevertReflectionActionResponse,
    SetSessionOutcomeRequest,
    SetSessionOutcomeResponse,
)
from reflexio.service import evaluation_overview, evaluations, outcomes, reflection

__all__ = ["router"]

router = api_router("evaluation")


@router.post("/session_outcome", responses=documented(404))
def session_outcome(
    body: SetSessionOutcomeRequest, core: CoreDep, caller: CallerDep
) -> SetSessionOutcomeResponse:
    """Record what the agent's systems say about a session (404 for an unknown session)."""
    return outcomes.set_session_outcome(core, caller.org_id, body)


@router.post("/get_session_outcomes")
def get_session_outcomes(
    body: GetSessionOutcomesRequest, core: CoreDep, caller: CallerDep
) -> GetSessionOutcomesResponse:
    """Each session's latest outcome (every revision with ``include_history``), newest first."""
    return outcomes.get_session_outcomes(core, caller.org_id, body)


@router.get("/evaluations/shadow_comparisons/recent")
def recent_shadow_comparisons(
    core: CoreDep, caller: CallerDep, limit: int = Query(default=10, ge=1, le=100)
) -> GetRecentShadowComparisonsResponse:
    """The latest per-turn regular vs shadow verdicts."""
    return evaluations.recent_shadow_comparisons(core, caller.org_id, limit)


@router.post("/get_evaluation_overview")
def get_evaluation_overview(
    body: GetEvaluationOverviewRequest, core: CoreDep, caller: CallerDep
) -> GetEvaluationOverviewResponse:
    """Success rates regular vs shadow, corrections, escalations and rule attribution."""
    return evaluation_overview.evaluation_overview(core, caller.org_id, body)


@router.post("/evaluations/grade_on_demand")
def grade_on_demand(body: GradeOnDemandRequest, core: CoreDep, caller: CallerDep) -> GradeOnDemandResponse:
    """Judge one session now (cached for 24 h while it has no new turns)."""
    return evaluations.grade_on_demand(core, caller.org_id, body)


@router.post("/get_playbook_application_stats")
def get_playbook_application_stats(
    body: GetPlaybookApplicationStatsRequest, core: CoreDep, caller: CallerDep
) -> GetPlaybookApplicationStatsResponse:
    """Per learning cited or injected in the window: how often, and how it fared."""
    return evaluations.application_stats(core, caller.org_id, body)


@router.post("/get_learning_impact")
def get_learning_impact(
    body: GetLearningImpactRequest, core: CoreDep, caller: CallerDep
) -> GetLearningImpactResponse:
    """Exposures, outcome counts and effect intervals of learnings (our addition)."""
    return evaluations.learning_impact(core, caller.org_id, body)


@router.post("/get_reflection_actions", responses=documented(404))
def get_reflection_actions(
    body: ListReflectionActionsRequest, core: CoreDep, caller: CallerDep
) -> ListReflectionActionsResponse:
    """What reflection did to learnings, why, and whether it was reverted (our addition)."""
    return reflection.list_actions(core, caller.org_id, body)


@router.post("/revert_reflection_action", responses=documented(403, 404, 409))
def revert_reflection_action(
    body: RevertReflectionActionRequest, core: CoreDep, caller: CallerDep
) -> RevertReflectionActionResponse:
    """Undo a reflection action (409 when it was reverted or the learning moved since).

    Undoing one serves a retired or suspended learning again: a review decision, so it takes
    a reviewer's key, as the dashboard's Restore does.
    """
    require_reviewer(caller, "reverting a reflection action")
    return reflection.revert(core, caller.org_id, body, actor=caller.actor)
