"""One user's data as a whole: take it away (export) or remove it (clear).

Export is complete: every request and turn, profiles and user playbooks in every lifecycle
state (tombstones included), both kinds of verdicts and the history of the user's learnings.
Clearing removes the same things plus what only the machinery keeps (extraction bookmarks,
search exposures), in one storage transaction. Agent playbooks are shared by all users and
are neither exported nor cleared.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict
from enum import Enum
from typing import Any, TypeVar

from pydantic import Field

from reflexio.errors import ValidationError
from reflexio.filters import InteractionFilter, LearningFilter, RequestFilter
from reflexio.learn.aggregation_trigger import delay_of, enqueue_aggregations
from reflexio.models import (
    ClearUserDataRequest,
    ClearUserDataResponse,
    ExportUserDataResponse,
    GetSessionOutcomesRequest,
    LearningImpactView,
    SessionOutcomeRecord,
)
from reflexio.records import EvaluationRecord, LearningEvent, LearningKind, LearningStatus, RequestRecord
from reflexio.service import impact, outcomes, views
from reflexio.service.core import Core

__all__ = ["UserExport", "clear_user_data", "export_user_data"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Rows read per storage call while exporting.
_PAGE = 1_000
#: Upper bound on rows of one kind in an export (a guard, far above any real user).
_MAX_ROWS = 1_000_000


class UserExport(ExportUserDataResponse):
    """``ExportUserDataResponse`` plus the history of the user's learnings (who changed what, why)."""

    learning_history: list[dict[str, Any]] = Field(default_factory=list)
    learning_impacts: list[LearningImpactView] = Field(default_factory=list)
    session_outcomes: list[SessionOutcomeRecord] = Field(default_factory=list)


def clear_user_data(core: Core, org_id: str, req: ClearUserDataRequest) -> ClearUserDataResponse:
    """Delete everything of one user in the caller's org, search indexes included.

    Agent playbooks are everyone's and stay, but the user's lessons no longer stand behind
    them: the scopes the user taught are queued for aggregation in the same transaction, so a
    playbook left with too few users leaves retrieval at the next run.
    """
    taught = LearningFilter(
        kinds=(LearningKind.USER_PLAYBOOK,), user_id=req.user_id, statuses=(LearningStatus.CURRENT,)
    )
    delay = delay_of(core.org_config(org_id))
    with core.storage.transaction() as tx:
        rules = tx.get_learnings(org_id, taught)
        counts = tx.clear_user(org_id, req.user_id)
        enqueue_aggregations(tx, org_id, rules, delay=delay)
    counts.pop("agent_playbooks", None)  # never the user's: always zero
    total = sum(counts.values())
    return ClearUserDataResponse(
        success=True, deleted_counts=counts, message=f"Deleted {total} row(s) of user {req.user_id!r}"
    )


def export_user_data(core: Core, org_id: str, user_id: str) -> UserExport:
    """Everything stored about one user in the caller's org, as one JSON document.

    Raises:
        ValidationError: ``user_id`` is blank.
    """
    if not user_id.strip():
        raise ValidationError("user_id must not be blank")
    storage = core.storage
    requests = _all_requests(core, org_id, user_id)
    turns = storage.list_interactions(org_id, InteractionFilter(user_id=user_id), limit=_MAX_ROWS)
    learnings = storage.get_learnings(
        org_id, LearningFilter(kinds=(LearningKind.PROFILE, LearningKind.USER_PLAYBOOK), user_id=user_id)
    )
    events = storage.list_events(org_id, user_id=user_id, limit=_MAX_ROWS)
    return UserExport(
        user_id=user_id,
        requests=[views.request_model(r) for r in requests],
        interactions=[views.interaction_model(t) for t in turns],
        profiles=[views.user_profile(r) for r in learnings if r.kind is LearningKind.PROFILE],
        user_playbooks=[views.user_playbook(r) for r in learnings if r.kind is LearningKind.USER_PLAYBOOK],
        agent_success_evaluation_results=_verdicts(
            core, org_id, user_id, "session", views.session_evaluation
        ),
        retrieved_learning_evaluation_results=_verdicts(
            core, org_id, user_id, "learning", views.learning_evaluation
        ),
        learning_history=[_event_dict(e) for e in reversed(events)],
        learning_impacts=list(
            impact.impacts(storage, org_id, [impact.ref_of(r) for r in learnings]).values()
        ),
        session_outcomes=outcomes.get_session_outcomes(
            core, org_id, GetSessionOutcomesRequest(user_id=user_id, top_k=1000, include_history=True)
        ).session_outcomes,
    )


def _all_requests(core: Core, org_id: str, user_id: str) -> list[RequestRecord]:
    out: list[RequestRecord] = []
    while True:
        batch = core.storage.list_requests(
            org_id, RequestFilter(user_id=user_id), limit=_PAGE, offset=len(out)
        )
        out.extend(batch)
        if len(batch) < _PAGE:
            return out[::-1]  # oldest first, like the turns


def _verdicts(
    core: Core, org_id: str, user_id: str, kind: str, convert: Callable[[EvaluationRecord], T]
) -> list[T]:
    out = []
    for row in core.storage.list_evaluations(org_id, kind=kind, user_id=user_id, limit=_MAX_ROWS):
        try:
            out.append(convert(row))
        except ValueError as exc:  # a verdict a judge left half-written: log it, export the rest
            log.warning("%s evaluation %s of user %s is not exportable: %s", kind, row.id, user_id, exc)
    return out


def _event_dict(event: LearningEvent) -> dict[str, Any]:
    data = asdict(event)
    data.pop("org_id", None)
    return {k: v.value if isinstance(v, Enum) else v for k, v in data.items()}
