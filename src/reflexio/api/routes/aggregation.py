"""Generalize routes (0.2.32 shapes): run an aggregation, follow its operation, read change logs,
and the review queue (an addition in the same style)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import api_router, documented
from reflexio.models import RunPlaybookAggregationRequest, RunPlaybookAggregationResponse
from reflexio.models.api_aggregation import (
    GetReviewQueueRequest,
    PendingReviewResponse,
    PlaybookAggregationChangeLogResponse,
    PlaybookAggregationOperation,
    PlaybookAggregationOperationRequest,
)
from reflexio.models.fields import NonEmptyStr
from reflexio.service import aggregation, review_queue

__all__ = ["RUN_WAIT_SECONDS", "router"]

router = api_router("aggregation")

#: How long the synchronous run waits for its job (Reflexio's run was subject to a 60 s timeout).
RUN_WAIT_SECONDS = 55.0


@router.post("/run_playbook_aggregation")
def run_playbook_aggregation(
    body: RunPlaybookAggregationRequest, core: CoreDep, caller: CallerDep
) -> RunPlaybookAggregationResponse:
    """Aggregate one agent version's user playbooks now and answer when done (the durable job
    runs it; a run still going after the wait says which operation to follow)."""
    req = PlaybookAggregationOperationRequest(
        agent_version=body.agent_version, playbook_name=body.playbook_name
    )
    op = aggregation.run_and_wait(core, caller.org_id, req, wait_seconds=RUN_WAIT_SECONDS)
    return aggregation.run_response(op)


@router.post("/playbook_aggregation_operations", status_code=202)
def submit_playbook_aggregation(
    body: PlaybookAggregationOperationRequest, core: CoreDep, caller: CallerDep
) -> PlaybookAggregationOperation:
    """Queue a durable aggregation (202); poll its operation id."""
    return aggregation.submit(core, caller.org_id, body)


@router.get("/playbook_aggregation_operations/{operation_id}", responses=documented(404))
def get_playbook_aggregation_operation(
    operation_id: str, core: CoreDep, caller: CallerDep
) -> PlaybookAggregationOperation:
    """Status, attempts, progress and, once done, result counts (404 for an unknown id)."""
    return aggregation.get_operation(core, caller.org_id, operation_id)


@router.get("/playbook_aggregation_change_logs")
def get_playbook_aggregation_change_logs(
    core: CoreDep,
    caller: CallerDep,
    playbook_name: Annotated[NonEmptyStr, Query()],
    agent_version: Annotated[NonEmptyStr, Query()],
    limit: Annotated[int, Query(gt=0, le=100)] = 100,
) -> PlaybookAggregationChangeLogResponse:
    """What the latest runs of one scope added, retired and rewrote, newest first."""
    return aggregation.change_logs(
        core, caller.org_id, agent_version=agent_version, playbook_name=playbook_name, limit=limit
    )


@router.post("/get_agent_playbook_review_queue")
def get_agent_playbook_review_queue(
    body: GetReviewQueueRequest, core: CoreDep, caller: CallerDep
) -> PendingReviewResponse:
    """Pending agent playbooks and revisions, oldest first, each with its evidence (the user
    playbooks it generalises, distinct users, the version a revision replaces), and counts per
    review state. Reading needs no reviewer key; deciding does."""
    return review_queue.review_queue(core, caller.org_id, agent_version=body.agent_version, limit=body.limit)
