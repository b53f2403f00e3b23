"""Reading judgements: session success verdicts and per-learning verdicts.

Sessions are judged by the idle-timer job (``service.workers``); the verdicts are stored as
``session`` evaluations and served here in Reflexio's shapes.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError as PydanticError

from reflexio.models import (
    EvaluationResultView,
    GetAgentSuccessEvaluationResultsRequest,
    GetEvaluationResultsViewResponse,
    GetRetrievedLearningEvaluationResultsRequest,
    GetRetrievedLearningEvaluationResultsResponse,
)
from reflexio.service import views
from reflexio.service.core import Core

__all__ = ["agent_success_results", "retrieved_learning_results"]

log = logging.getLogger(__name__)


def agent_success_results(
    core: Core, org_id: str, req: GetAgentSuccessEvaluationResultsRequest
) -> GetEvaluationResultsViewResponse:
    """Session-success verdicts, newest first, optionally for one agent version and time window."""
    rows = core.storage.list_evaluations(
        org_id,
        kind="session",
        agent_version=req.agent_version or None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
        limit=req.limit or 100,
    )
    results: list[EvaluationResultView] = []
    for row in rows:
        try:
            results.append(views.session_evaluation(row))
        except PydanticError as exc:  # a verdict stored by an older judge: skip, don't fail the read
            log.warning("skipping unreadable session evaluation %s: %s", row.id, exc)
    return GetEvaluationResultsViewResponse(success=True, agent_success_evaluation_results=results)


def retrieved_learning_results(
    core: Core, org_id: str, req: GetRetrievedLearningEvaluationResultsRequest
) -> GetRetrievedLearningEvaluationResultsResponse:
    """Verdicts on learnings that were injected into sessions, newest first."""
    rows = core.storage.list_evaluations(
        org_id,
        kind="learning",
        user_id=req.user_id or None,
        session_id=req.session_id or None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
        limit=req.limit,
    )
    return GetRetrievedLearningEvaluationResultsResponse(
        success=True, results=[views.learning_evaluation(row) for row in rows]
    )
