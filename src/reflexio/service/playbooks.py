"""Add, read, edit, review and delete user and agent playbooks.

Profiles live in ``service.profiles``; both go through the helpers of
``service.learning_access``.

Default status filters follow docs/wire-compat.md: ``get_user_playbooks`` with no filter shows
every non-tombstone state, ``get_agent_playbooks`` shows the current version in any review state.
"""

from __future__ import annotations

from reflexio.filters import ACTIVE_STATUSES, LearningFilter
from reflexio.learn.review import Action, ReviewState
from reflexio.models import (
    AddAgentPlaybookRequest,
    AddAgentPlaybookResponse,
    AddUserPlaybookRequest,
    AddUserPlaybookResponse,
    BulkDeleteResponse,
    DeleteAgentPlaybookRequest,
    DeleteAgentPlaybookResponse,
    DeleteAgentPlaybooksByIdsRequest,
    DeleteUserPlaybookRequest,
    DeleteUserPlaybookResponse,
    DeleteUserPlaybooksByIdsRequest,
    GetAgentPlaybooksRequest,
    GetAgentPlaybooksViewResponse,
    GetUserPlaybooksRequest,
    GetUserPlaybooksViewResponse,
    PlaybookStatus,
    UpdateAgentPlaybookRequest,
    UpdateAgentPlaybookResponse,
    UpdatePlaybookStatusRequest,
    UpdatePlaybookStatusResponse,
    UpdateUserPlaybookRequest,
    UpdateUserPlaybookResponse,
)
from reflexio.records import Approval, LearningKind, LearningStatus
from reflexio.service import impact, review, views
from reflexio.service.bulk import save_embedded
from reflexio.service.cancellation import NEVER, Cancellation
from reflexio.service.core import Core
from reflexio.service.learning_access import (
    audit,
    bulk_delete,
    delete_one,
    find_one,
    listed,
    statuses_or,
    text_changes,
)

__all__ = [
    "add_agent_playbooks",
    "add_user_playbooks",
    "delete_agent_playbook",
    "delete_agent_playbooks_by_ids",
    "delete_all_agent_playbooks",
    "delete_all_playbooks",
    "delete_all_user_playbooks",
    "delete_user_playbook",
    "delete_user_playbooks_by_ids",
    "get_agent_playbooks",
    "get_user_playbooks",
    "update_agent_playbook",
    "update_agent_playbook_status",
    "update_user_playbook",
]

USER = LearningKind.USER_PLAYBOOK
AGENT = LearningKind.AGENT_PLAYBOOK


# -- user playbooks -----------------------------------------------------------------------------


def add_user_playbooks(
    core: Core,
    org_id: str,
    req: AddUserPlaybookRequest,
    *,
    actor: str = "api",
    cancel: Cancellation = NEVER,
) -> AddUserPlaybookResponse:
    """Store hand-written user playbooks (embedded and indexed like extracted ones).

    Raises:
        RequestCancelledError: ``cancel`` was set before they were saved (nothing was).
    """
    rows = [views.from_user_playbook(org_id, p) for p in req.user_playbooks]
    saved = save_embedded(core, rows, audit(actor, "added through the API"), cancel)
    return AddUserPlaybookResponse(
        success=True,
        added_count=len(saved),
        message=f"Added {len(saved)} user playbook(s)",
        user_playbook_ids=[row.id for row in saved],
    )


def get_user_playbooks(core: Core, org_id: str, req: GetUserPlaybooksRequest) -> GetUserPlaybooksViewResponse:
    """User playbooks by scope; no status filter means every non-tombstone state."""
    where = LearningFilter(
        kinds=(USER,),
        ids=(req.user_playbook_id,) if req.user_playbook_id else None,
        user_id=req.user_id or None,
        request_id=req.request_id or None,
        playbook_name=req.playbook_name or None,
        agent_version=req.agent_version or None,
        statuses=statuses_or(req.status_filter, ACTIVE_STATUSES),
        tags=tuple(req.tags) if req.tags else None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
    )
    hits = listed(core, org_id, where, req.query, req.limit or 100)
    return GetUserPlaybooksViewResponse(
        success=True,
        user_playbooks=impact.with_impacts(
            core.storage, org_id, [views.user_playbook_view(r, s) for r, s in hits]
        ),
    )


def update_user_playbook(
    core: Core, org_id: str, req: UpdateUserPlaybookRequest, *, actor: str = "api"
) -> UpdateUserPlaybookResponse:
    """Edit a user playbook's text; the row is re-embedded when its text changes.

    Raises:
        NotFoundError: No such user playbook in the caller's org.
    """
    what = f"user playbook {req.user_playbook_id}"
    row = find_one(core.storage, org_id, LearningFilter(kinds=(USER,), ids=(req.user_playbook_id,)), what)
    changes = text_changes(
        playbook_name=req.playbook_name, content=req.content, trigger=req.trigger, rationale=req.rationale
    )
    if changes:
        core.storage.save_learnings([row.copy(**changes)], audit(actor, "edited through the API"))
    return UpdateUserPlaybookResponse(success=True, msg=f"Updated {what}" if changes else "Nothing to update")


def delete_user_playbook(
    core: Core, org_id: str, req: DeleteUserPlaybookRequest, *, actor: str = "api"
) -> DeleteUserPlaybookResponse:
    """Delete one user playbook (404 when it does not exist)."""
    what = f"user playbook {req.user_playbook_id}"
    delete_one(core, org_id, LearningFilter(kinds=(USER,), ids=(req.user_playbook_id,)), what, actor)
    return DeleteUserPlaybookResponse(success=True, message=f"Deleted {what}")


def delete_user_playbooks_by_ids(
    core: Core, org_id: str, req: DeleteUserPlaybooksByIdsRequest, *, actor: str = "api"
) -> BulkDeleteResponse:
    """Delete the listed user playbooks that exist; the count says how many did."""
    where = LearningFilter(kinds=(USER,), ids=tuple(req.user_playbook_ids))
    return bulk_delete(core, org_id, where, "user playbook(s)", actor)


def delete_all_user_playbooks(core: Core, org_id: str, *, actor: str = "api") -> BulkDeleteResponse:
    """Delete every user playbook of the org."""
    return bulk_delete(core, org_id, LearningFilter(kinds=(USER,)), "user playbook(s)", actor)


# -- agent playbooks ----------------------------------------------------------------------------


def add_agent_playbooks(
    core: Core,
    org_id: str,
    req: AddAgentPlaybookRequest,
    *,
    actor: str = "api",
    cancel: Cancellation = NEVER,
) -> AddAgentPlaybookResponse:
    """Store hand-written agent playbooks in the review state the caller gives (default pending).

    Raises:
        RequestCancelledError: ``cancel`` was set before they were saved (nothing was).
    """
    rows = [views.from_agent_playbook(org_id, p) for p in req.agent_playbooks]
    saved = save_embedded(core, rows, audit(actor, "added through the API"), cancel)
    return AddAgentPlaybookResponse(
        success=True,
        added_count=len(saved),
        message=f"Added {len(saved)} agent playbook(s)",
        agent_playbook_ids=[row.id for row in saved],
    )


def get_agent_playbooks(
    core: Core, org_id: str, req: GetAgentPlaybooksRequest
) -> GetAgentPlaybooksViewResponse:
    """Agent playbooks in any review state (for review screens); current versions by default."""
    review = req.playbook_status_filter
    where = LearningFilter(
        kinds=(AGENT,),
        ids=(req.agent_playbook_id,) if req.agent_playbook_id else None,
        playbook_name=req.playbook_name or None,
        agent_version=req.agent_version or None,
        statuses=statuses_or(req.status_filter, (LearningStatus.CURRENT,)),
        approvals=None if review is None else (Approval(PlaybookStatus(review).value),),
        tags=tuple(req.tags) if req.tags else None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
    )
    hits = listed(core, org_id, where, req.query, req.limit or 100)
    return GetAgentPlaybooksViewResponse(
        success=True,
        agent_playbooks=impact.with_impacts(
            core.storage, org_id, [views.agent_playbook_view(r, s) for r, s in hits]
        ),
    )


def update_agent_playbook(
    core: Core, org_id: str, req: UpdateAgentPlaybookRequest, *, actor: str = "api"
) -> UpdateAgentPlaybookResponse:
    """Rewrite an agent playbook's text and/or decide on it, each checked by its review state.

    A rewrite keeps the old text in the history; a review state change is recorded as its own
    event, exactly as ``update_agent_playbook_status`` records it.

    Raises:
        NotFoundError: No such agent playbook in the caller's org.
        IllegalTransition: The state does not allow it (HTTP 409 naming the state).
    """
    what = f"agent playbook {req.agent_playbook_id}"
    changes = text_changes(
        playbook_name=req.playbook_name, content=req.content, trigger=req.trigger, rationale=req.rationale
    )
    expected = _state(req.expected_status)
    if changes:
        review.review(
            core, org_id, req.agent_playbook_id, Action.REWRITE,
            actor=actor, note=req.note, expected=expected, text=changes,
        )  # fmt: skip
        expected = None  # the rewrite kept the state; the decision below is checked afresh
    if req.playbook_status is not None:
        decide = review.ACTION_OF_STATUS[PlaybookStatus(req.playbook_status)]
        review.review(
            core, org_id, req.agent_playbook_id, decide, actor=actor, note=req.note, expected=expected
        )
    if not changes and req.playbook_status is None:
        review.current_state(core.storage, org_id, req.agent_playbook_id)  # 404 for a missing id
    changed = bool(changes) or req.playbook_status is not None
    return UpdateAgentPlaybookResponse(
        success=True, msg=f"Updated {what}" if changed else "Nothing to update"
    )


def update_agent_playbook_status(
    core: Core, org_id: str, req: UpdatePlaybookStatusRequest, *, actor: str = "api"
) -> UpdatePlaybookStatusResponse:
    """Approve, reject or re-open an agent playbook; a rejected one leaves retrieval at once.

    Raises:
        NotFoundError: No such agent playbook in the caller's org.
        IllegalTransition: The state does not allow it, or changed since ``expected_status``
            (HTTP 409 naming the current state).
    """
    what = f"agent playbook {req.agent_playbook_id}"
    action = review.ACTION_OF_STATUS[PlaybookStatus(req.playbook_status)]
    state = review.review(
        core, org_id, req.agent_playbook_id, action,
        actor=actor, note=req.note, expected=_state(req.expected_status),
    )  # fmt: skip
    return UpdatePlaybookStatusResponse(success=True, msg=f"Set {what} to {state.value}")


def _state(status: PlaybookStatus | None) -> ReviewState | None:
    return None if status is None else ReviewState(PlaybookStatus(status).value)


def delete_agent_playbook(
    core: Core, org_id: str, req: DeleteAgentPlaybookRequest, *, actor: str = "api"
) -> DeleteAgentPlaybookResponse:
    """Delete one agent playbook: 404 when it never existed, 409 when it is already deleted."""
    what = f"agent playbook {req.agent_playbook_id}"
    review.review(core, org_id, req.agent_playbook_id, Action.DELETE, actor=actor)
    return DeleteAgentPlaybookResponse(success=True, message=f"Deleted {what}")


def delete_agent_playbooks_by_ids(
    core: Core, org_id: str, req: DeleteAgentPlaybooksByIdsRequest, *, actor: str = "api"
) -> BulkDeleteResponse:
    """Delete the listed agent playbooks that exist; the count says how many did."""
    where = LearningFilter(kinds=(AGENT,), ids=tuple(req.agent_playbook_ids))
    return bulk_delete(core, org_id, where, "agent playbook(s)", actor)


def delete_all_agent_playbooks(core: Core, org_id: str, *, actor: str = "api") -> BulkDeleteResponse:
    """Delete every agent playbook of the org."""
    return bulk_delete(core, org_id, LearningFilter(kinds=(AGENT,)), "agent playbook(s)", actor)


def delete_all_playbooks(core: Core, org_id: str, *, actor: str = "api") -> BulkDeleteResponse:
    """Delete every user and agent playbook of the org (profiles stay)."""
    return bulk_delete(core, org_id, LearningFilter(kinds=(USER, AGENT)), "playbook(s)", actor)
