"""The review lifecycle of an agent playbook, as pure functions over its state.

An agent playbook is proposed by aggregation (or added by hand) and then reviewed:

* ``pending``: proposed, waiting for a reviewer. Served by default unless the org requires
  approval (``approval_required``).
* ``approved``: a reviewer (or the org's auto-approval policy) accepted it. Aggregation never
  overwrites it; when its cluster changes, a pending *revision* is proposed instead.
* ``rejected``: a reviewer refused it (or revoked an approval). Never served; not proposed
  again from the same evidence.
* ``archived``: an approved version replaced by its approved revision; kept for history.
* ``suspended``: reflection found it hurting in an org that requires approval, and stopped
  serving it until a reviewer decides: approve puts it back (approved), reject rejects it.
  A revision reflection proposes waits here too.
* ``retired``: reflection stopped serving it because it hurt; reverting that action (not a
  review action) brings it back.
* ``deleted``: removed by a reviewer; only its history remains.

Every reviewer action is checked here before anything is written: an action that makes no
sense in the current state (rewriting a deleted playbook, approving an approved one) raises
``IllegalTransition`` naming the current state, which travels as HTTP 409. A caller that acted
on a state it saw (a dashboard button, a CLI listing) passes it as ``expected``; if the state
moved meanwhile (another reviewer was faster), that is a 409 too, so of two concurrent
decisions exactly one wins whatever order the store serialises them in.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from reflexio.errors import ConflictError
from reflexio.records import Approval, LearningStatus

__all__ = [
    "TRANSITIONS",
    "Action",
    "IllegalTransition",
    "ReviewState",
    "Step",
    "approval_of",
    "next_state",
    "state_of",
    "step",
]


class ReviewState(StrEnum):
    """Where an agent playbook is in its review life."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    ARCHIVED = "archived"
    SUSPENDED = "suspended"
    RETIRED = "retired"
    DELETED = "deleted"


class Action(StrEnum):
    """What a reviewer does to an agent playbook (each is recorded as an audit event)."""

    APPROVE = "approve"
    REJECT = "reject"
    REOPEN = "reopen"  # back to pending, for another look
    REWRITE = "rewrite"  # new text by a reviewer; the old text stays in the history
    DELETE = "delete"


P, A, R, X, S, T, D = (
    ReviewState.PENDING,
    ReviewState.APPROVED,
    ReviewState.REJECTED,
    ReviewState.ARCHIVED,
    ReviewState.SUSPENDED,
    ReviewState.RETIRED,
    ReviewState.DELETED,
)

#: Every legal (state, action) and the state it leads to; anything else is a 409.
TRANSITIONS: Final[dict[tuple[ReviewState, Action], ReviewState]] = {
    (P, Action.APPROVE): A,
    (P, Action.REJECT): R,
    (P, Action.REWRITE): P,
    (P, Action.DELETE): D,
    (A, Action.REJECT): R,  # revocation: leaves retrieval at once
    (A, Action.REOPEN): P,
    (A, Action.REWRITE): A,  # a reviewer's own wording stays approved
    (A, Action.DELETE): D,
    (R, Action.APPROVE): A,  # a reviewer changing their mind, knowingly
    (R, Action.REOPEN): P,
    (R, Action.DELETE): D,
    (X, Action.DELETE): D,
    (S, Action.APPROVE): A,  # the reviewer overrules the evidence: served again
    (S, Action.REJECT): R,  # the reviewer confirms it: never served again
    (S, Action.DELETE): D,
    (T, Action.DELETE): D,
}

_WHY_NOT: Final[dict[ReviewState, str]] = {
    P: "it is pending",
    A: "it is already approved",
    R: "it is rejected",
    X: "it is archived: a newer approved version replaced it",
    S: "it is suspended: approve or reject it",
    T: "it was retired by reflection: revert that action to bring it back",
    D: "it was deleted",
}


class IllegalTransition(ConflictError):
    """A review action that the playbook's current state does not allow (HTTP 409)."""

    def __init__(self, playbook_id: int, action: Action, current: ReviewState, reason: str) -> None:
        super().__init__(
            f"cannot {action.value} agent playbook {playbook_id}: {reason}",
            details={
                "agent_playbook_id": playbook_id,
                "action": action.value,
                "current_state": current.value,
            },
        )
        self.current = current


def state_of(approval: Approval | None, status: LearningStatus | None) -> ReviewState:
    """The review state of a stored row (``status`` None means the row no longer exists)."""
    if status is None:
        return D
    if status is LearningStatus.SUSPENDED:
        return S
    if status is LearningStatus.RETIRED:
        return T
    if status is not LearningStatus.CURRENT:
        return X
    return ReviewState((approval or Approval.PENDING).value)


def approval_of(state: ReviewState) -> Approval:
    """The approval column for a live state (archived rows keep their last approval)."""
    if state in (X, S, T, D):
        raise ValueError(f"{state.value} is not a live review state")
    return Approval(state.value)


def next_state(current: ReviewState, action: Action) -> ReviewState | None:
    """The state ``action`` leads to from ``current``, or None when it is not allowed."""
    return TRANSITIONS.get((current, action))


@dataclass(frozen=True, slots=True)
class Step:
    """A checked transition: apply it only if the row is still in ``before`` when written."""

    playbook_id: int
    action: Action
    before: ReviewState
    after: ReviewState


def step(
    playbook_id: int, current: ReviewState, action: Action, *, expected: ReviewState | None = None
) -> Step:
    """Check a reviewer's action against the playbook's state.

    Args:
        playbook_id: The agent playbook.
        current: Its state as just read.
        action: What the reviewer asks.
        expected: The state the reviewer acted on, when known; a different current state
            means someone else changed it first.

    Raises:
        IllegalTransition: The state moved since the reviewer saw it, or the action is not
            allowed from it.
    """
    if expected is not None and current is not expected:
        reason = f"it is {current.value} now, not {expected.value} as expected (someone else changed it)"
        raise IllegalTransition(playbook_id, action, current, reason)
    after = next_state(current, action)
    if after is None:
        raise IllegalTransition(playbook_id, action, current, _WHY_NOT[current])
    return Step(playbook_id, action, current, after)
