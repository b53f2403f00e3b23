"""Session outcomes reported by the agent's own systems (ticket closed, escalated, refunded).

A reported outcome outranks any judge. Each report is stored as a new revision of the
session's outcome; the latest wins and the earlier ones stay in the history. A report makes the
session's judgement due at once (the session-idle job, debounced), so the verdicts on the
session and on every learning it was given are redone with the outcome — and so is the
reflection that reads them.

The session must exist in the org: an outcome for a session nothing was published in is a 404,
never a row waiting for a session that may never come. When two users published under the same
session id, the report must say whose (``user_id``), or it is refused (409) rather than guessed.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from reflexio.errors import ConflictError, NotFoundError
from reflexio.filters import RequestFilter
from reflexio.models import (
    GetSessionOutcomesRequest,
    GetSessionOutcomesResponse,
    SessionOutcomeRecord,
    SetSessionOutcomeRequest,
    SetSessionOutcomeResponse,
)
from reflexio.records import OutcomeRecord, now
from reflexio.service import publish
from reflexio.service.core import Core
from reflexio.storage import Storage

__all__ = ["get_session_outcomes", "set_session_outcome"]


def _owner(storage: Storage, org_id: str, session_id: str, user_id: str | None) -> tuple[str, str]:
    """(user, agent version) of a published session.

    Raises:
        NotFoundError: Nothing was published in this session (for this user).
        ConflictError: Several users share the session id and the report names none.
    """
    found = storage.list_requests(org_id, RequestFilter(session_id=session_id, user_id=user_id), limit=50)
    users = sorted({r.user_id for r in found})
    if not users:
        who = f" for user {user_id!r}" if user_id else ""
        raise NotFoundError(
            f"session {session_id!r} not found{who}: publish its interactions before reporting its outcome",
            details={"session_id": session_id},
        )
    if len(users) > 1:
        raise ConflictError(
            f"session {session_id!r} belongs to {len(users)} users; say whose outcome this is with user_id",
            details={"session_id": session_id, "users": users[:10]},
        )
    return users[0], found[0].agent_version


def _digest(req: SetSessionOutcomeRequest) -> str:
    body = req.model_dump(mode="json", exclude={"user_id"})
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def set_session_outcome(core: Core, org_id: str, req: SetSessionOutcomeRequest) -> SetSessionOutcomeResponse:
    """Record a new revision of a session's outcome and re-judge the session with it.

    Raises:
        NotFoundError: The session does not exist in the org (HTTP 404).
        ConflictError: The session id is shared by several users and ``user_id`` is missing.
    """
    user_id, agent_version = _owner(core.storage, org_id, req.session_id, req.user_id)
    row = OutcomeRecord(
        org_id=org_id,
        session_id=req.session_id,
        user_id=user_id,
        outcome=req.outcome.value,
        occurred_at=req.occurred_at,
        outcome_id=uuid.uuid4().hex,
        label=req.label,
        value=req.value,
        metadata=req.metadata,
    )
    with core.storage.transaction() as tx:
        saved = tx.add_outcome(row)
        job = publish.idle_job(org_id, user_id, req.session_id, agent_version, run_at=now())
        tx.enqueue_jobs([job], debounce=True)
        tx.expedite_job(org_id, publish.EVALUATE_SESSION, job.key or "")
    return SetSessionOutcomeResponse(
        success=True,
        recorded=True,
        message=f"outcome revision {saved.revision} recorded; the session is judged again with it",
        user_id=user_id,
        source=saved.source,
        outcome_id=saved.outcome_id,
        outcome_revision=saved.revision,
        outcome_contract_digest=_digest(req),
        finalized_trajectory_digest=hashlib.sha256(
            f"{org_id}\0{user_id}\0{req.session_id}".encode()
        ).hexdigest(),
    )


def get_session_outcomes(
    core: Core, org_id: str, req: GetSessionOutcomesRequest
) -> GetSessionOutcomesResponse:
    """Outcomes, newest first: each session's latest revision, or all of them with history."""
    rows = core.storage.list_outcomes(
        org_id,
        session_ids=req.session_ids,
        user_id=req.user_id or None,
        source=req.source or None,
        outcome=req.outcome.value if req.outcome else None,
        label=req.label,
        occurred_after=req.start_time,
        occurred_before=req.end_time,
        latest_only=not req.include_history,
        limit=req.top_k,
        offset=req.offset,
    )
    latest: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r.user_id, r.session_id)
        latest[key] = max(latest.get(key, 0), r.revision)
    return GetSessionOutcomesResponse(
        success=True,
        session_outcomes=[
            SessionOutcomeRecord(
                outcome_id=r.outcome_id,
                outcome_revision=r.revision,
                user_id=r.user_id,
                session_id=r.session_id,
                outcome=r.outcome,
                occurred_at=r.occurred_at,
                source=r.source,
                label=r.label,
                value=r.value,
                metadata=r.metadata,
                created_at=int(r.created_at),
                superseded=r.revision < latest[(r.user_id, r.session_id)],
            )
            for r in rows
        ],
    )
