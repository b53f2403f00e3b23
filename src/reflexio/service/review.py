"""Review of agent playbooks: approve, reject, reopen, rewrite and delete, audited and race-safe.

Every action is checked against the playbook's state by ``learn.review`` before anything is
written, so an action that makes no sense (rewriting a deleted playbook, approving an approved
one) is a 409 naming the current state. Decisions are written as a compare-and-set on the
approval column — the row changes only if it is still in the state the decision was made
from — so of two reviewers deciding at once exactly one wins on every backend; the other gets
a 409 saying what the winner decided. Each action is a history event naming who (the API key,
or ``local``) and the reviewer's note; a refused action is a history event too (``refused``,
with the action tried and the state that refused it), so when two reviewers race the history
shows both attempts.

A rejection is a committed column change that search filters on before ranking, so the next
search in any process no longer serves the playbook.
"""

from __future__ import annotations

from typing import Any

from reflexio.errors import NotFoundError, PermissionDeniedError
from reflexio.filters import LearningFilter
from reflexio.learn.reflect import Action as ReflectAction
from reflexio.learn.review import Action, IllegalTransition, ReviewState, approval_of, state_of, step
from reflexio.models import PlaybookStatus
from reflexio.records import Approval, Audit, Learning, LearningEvent, LearningKind, LearningStatus
from reflexio.service.core import Core
from reflexio.storage import Storage

__all__ = ["ACTION_OF_STATUS", "REFUSED", "current_state", "require_reviewer", "review"]

AGENT = LearningKind.AGENT_PLAYBOOK
#: The history event of an action the playbook's state refused.
REFUSED = "refused"

#: The review action a wire ``playbook_status`` asks for.
ACTION_OF_STATUS = {
    PlaybookStatus.APPROVED: Action.APPROVE,
    PlaybookStatus.REJECTED: Action.REJECT,
    PlaybookStatus.PENDING: Action.REOPEN,
}


def require_reviewer(is_reviewer: bool, action: str) -> None:
    """Refuse a review ``action`` to someone whose key is not a reviewer's (REST, MCP and the
    dashboard ask the same question, and give the same answer).

    Raises:
        PermissionDeniedError: The key is not a reviewer's (``keys create --reviewer``,
            ``keys set-reviewer``).
    """
    if not is_reviewer:
        raise PermissionDeniedError(
            f"this API key may not review agent playbooks ({action}): only the operator on the "
            "server's machine and keys created with `reflexio keys create --reviewer` (or made "
            "reviewers with `reflexio keys set-reviewer KEY_ID`) may; use such a key, or leave "
            "the playbook pending for a reviewer",
            details={"action": action},
        )


def current_state(storage: Storage, org_id: str, playbook_id: int) -> tuple[Learning | None, ReviewState]:
    """The playbook's row (None once deleted) and its review state.

    Raises:
        NotFoundError: No agent playbook with this id ever existed in the org.
    """
    rows = storage.get_learnings(org_id, LearningFilter(kinds=(AGENT,), ids=(playbook_id,)))
    if rows:
        return rows[0], state_of(rows[0].approval, rows[0].status)
    history = storage.list_events(org_id, learning_ids=[playbook_id], kinds=[AGENT.value], limit=100)
    changes = [e for e in history if e.event != REFUSED]  # refused attempts changed nothing
    if changes and changes[0].event == "deleted":
        return None, ReviewState.DELETED
    raise NotFoundError(f"agent playbook {playbook_id} not found")


def review(
    core: Core,
    org_id: str,
    playbook_id: int,
    action: Action,
    *,
    actor: str,
    note: str | None = None,
    expected: ReviewState | None = None,
    text: dict[str, Any] | None = None,
) -> ReviewState:
    """Apply a reviewer's action; returns the playbook's new state.

    Args:
        core: The process core.
        org_id: The caller's org.
        playbook_id: The agent playbook.
        action: What the reviewer does.
        actor: Who (``key:<prefix>`` or ``local``), recorded in the history.
        note: Why, recorded in the history.
        expected: The state the reviewer acted on; a different one is a 409.
        text: For ``rewrite``: the fields to change (content, trigger, rationale, name).

    Raises:
        NotFoundError: No such agent playbook in the org.
        IllegalTransition: The action is not allowed from the current state, or the state
            changed since the reviewer saw it (HTTP 409 naming the current state); the
            refusal is written to the playbook's history.
    """
    try:
        return _apply(core, org_id, playbook_id, action, actor=actor, note=note, expected=expected, text=text)
    except IllegalTransition as refused:
        # Outside the rolled-back transaction: the attempt is history even though it changed nothing.
        core.storage.add_events([_refusal(org_id, playbook_id, action, refused, actor=actor, note=note)])
        raise


def _apply(
    core: Core,
    org_id: str,
    playbook_id: int,
    action: Action,
    *,
    actor: str,
    note: str | None,
    expected: ReviewState | None,
    text: dict[str, Any] | None,
) -> ReviewState:
    with core.storage.transaction() as tx:
        row, current = current_state(tx, org_id, playbook_id)
        done = step(playbook_id, current, action, expected=expected)
        audit = Audit(actor=actor, reason=_reason(action, note))
        if row is None:  # only a deleted playbook has no row, and nothing is legal from there
            raise IllegalTransition(playbook_id, action, current, "it was deleted")
        if action is Action.REWRITE:
            if text:
                tx.save_learnings([row.copy(**text)], audit)
            return done.after
        where = LearningFilter(
            kinds=(AGENT,),
            ids=(playbook_id,),
            statuses=(row.status,),
            approvals=(row.approval,) if row.approval is not None else None,
        )
        if action is Action.DELETE:
            changed = tx.delete_learnings(org_id, where, audit)
        else:
            changes: dict[str, Any] = {"approval": approval_of(done.after)}
            if done.before is ReviewState.SUSPENDED:  # a decision on a suspension ends it
                changes["status"] = LearningStatus.CURRENT
            changed = len(tx.update_learnings(org_id, where, changes, audit))
            if changed and action is Action.APPROVE:
                _archive_revised(tx, org_id, playbook_id, audit)
    if not changed:  # another reviewer changed the row between our read and our write
        _, now_state = current_state(core.storage, org_id, playbook_id)
        reason = f"it is {now_state.value} now (someone else changed it first)"
        raise IllegalTransition(playbook_id, action, now_state, reason)
    return done.after


def _archive_revised(tx: Storage, org_id: str, playbook_id: int, audit: Audit) -> None:
    """An approved revision replaces the version it revises: that one is archived
    (``superseded`` by the revision), its history kept, and leaves retrieval.

    A revision comes from Generalize (its proposal names the approved playbook it revises) or
    from reflection (its ``propose_revision`` action names the hurting playbook, which is
    retired or suspended by then: approving the fix settles that one too, so it does not wait
    in the suspended queue beside its own replacement).
    """
    proposals = tx.get_proposals(org_id, [playbook_id])
    revised = proposals[0].revises_id if proposals else None
    if revised is not None:
        statuses: tuple[LearningStatus, ...] = (LearningStatus.CURRENT,)
        approvals: tuple[Approval, ...] | None = (Approval.APPROVED,)
    else:
        proposed = tx.list_reflection_actions(
            org_id, related_learning_ids=[playbook_id], include_reverted=False, limit=1
        )
        if not proposed or proposed[0].action != ReflectAction.PROPOSE_REVISION.value:
            return
        revised = proposed[0].learning_id
        statuses, approvals = (LearningStatus.CURRENT, LearningStatus.SUSPENDED, LearningStatus.RETIRED), None
    where = LearningFilter(kinds=(AGENT,), ids=(revised,), statuses=statuses, approvals=approvals)
    why = Audit(actor=audit.actor, reason=f"replaced by its approved revision {playbook_id}")
    tx.update_learnings(
        org_id, where, {"status": LearningStatus.SUPERSEDED, "superseded_by": playbook_id}, why
    )


_DONE = {
    Action.APPROVE: "approved",
    Action.REJECT: "rejected",
    Action.REOPEN: "reopened for review",
    Action.REWRITE: "rewritten",
    Action.DELETE: "deleted",
}


def _refusal(
    org_id: str, playbook_id: int, action: Action, refused: IllegalTransition, *, actor: str, note: str | None
) -> LearningEvent:
    """The history entry of a refused action: what was tried, by whom, and why it was refused."""
    return LearningEvent(
        org_id=org_id,
        learning_id=playbook_id,
        kind=AGENT,
        event=REFUSED,
        actor=actor,
        reason=f"{refused.message}: {note}" if note else refused.message,
        before={"state": refused.current.value},
        after={"action": action.value},
    )


def _reason(action: Action, note: str | None) -> str:
    """The history's why: the action, and the reviewer's note when given."""
    said = f"{_DONE[action]} by a reviewer"
    return f"{said}: {note}" if note else said
