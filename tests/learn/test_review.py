"""The review state machine: every (state, action) pair, preconditions, and stored states."""

from __future__ import annotations

import itertools

import pytest

from reflexio.errors import ConflictError
from reflexio.learn.review import (
    TRANSITIONS,
    Action,
    IllegalTransition,
    ReviewState,
    approval_of,
    next_state,
    state_of,
    step,
)
from reflexio.records import Approval, LearningStatus

S = ReviewState
EXPECTED = {
    (S.PENDING, Action.APPROVE): S.APPROVED,
    (S.PENDING, Action.REJECT): S.REJECTED,
    (S.PENDING, Action.REWRITE): S.PENDING,
    (S.PENDING, Action.DELETE): S.DELETED,
    (S.APPROVED, Action.REJECT): S.REJECTED,
    (S.APPROVED, Action.REOPEN): S.PENDING,
    (S.APPROVED, Action.REWRITE): S.APPROVED,
    (S.APPROVED, Action.DELETE): S.DELETED,
    (S.REJECTED, Action.APPROVE): S.APPROVED,
    (S.REJECTED, Action.REOPEN): S.PENDING,
    (S.REJECTED, Action.DELETE): S.DELETED,
    (S.ARCHIVED, Action.DELETE): S.DELETED,
    (S.SUSPENDED, Action.APPROVE): S.APPROVED,
    (S.SUSPENDED, Action.REJECT): S.REJECTED,
    (S.SUSPENDED, Action.DELETE): S.DELETED,
    (S.RETIRED, Action.DELETE): S.DELETED,
}


@pytest.mark.parametrize(("state", "action"), list(itertools.product(ReviewState, Action)))
def test_every_pair_is_allowed_or_a_409_naming_the_state(state: ReviewState, action: Action) -> None:
    expected = EXPECTED.get((state, action))
    assert next_state(state, action) is expected
    if expected is not None:
        done = step(5, state, action)
        assert (done.before, done.after, done.action, done.playbook_id) == (state, expected, action, 5)
        return
    with pytest.raises(IllegalTransition) as caught:
        step(5, state, action)
    assert isinstance(caught.value, ConflictError) and caught.value.status_code == 409
    assert caught.value.details == {
        "agent_playbook_id": 5,
        "action": action.value,
        "current_state": state.value,
    }
    assert caught.value.current is state


def test_the_table_is_exactly_the_one_tested() -> None:
    assert dict(TRANSITIONS) == EXPECTED


def test_deleted_and_rejected_explain_themselves() -> None:
    with pytest.raises(IllegalTransition, match="cannot rewrite agent playbook 3: it was deleted"):
        step(3, S.DELETED, Action.REWRITE)
    with pytest.raises(IllegalTransition, match="cannot rewrite agent playbook 3: it is rejected"):
        step(3, S.REJECTED, Action.REWRITE)


def test_a_state_that_moved_since_the_reviewer_saw_it_is_a_conflict() -> None:
    """Two reviewers decide on the same pending playbook: whoever writes second loses."""
    first = step(8, S.PENDING, Action.APPROVE, expected=S.PENDING)
    assert first.after is S.APPROVED
    with pytest.raises(IllegalTransition, match="it is approved now, not pending as expected"):
        step(8, first.after, Action.REJECT, expected=S.PENDING)
    assert step(8, S.APPROVED, Action.REJECT).after is S.REJECTED  # a revocation, knowingly


def test_states_of_stored_rows() -> None:
    assert state_of(Approval.APPROVED, LearningStatus.CURRENT) is S.APPROVED
    assert state_of(None, LearningStatus.CURRENT) is S.PENDING
    assert state_of(Approval.REJECTED, LearningStatus.CURRENT) is S.REJECTED
    assert state_of(Approval.APPROVED, LearningStatus.SUPERSEDED) is S.ARCHIVED
    assert state_of(Approval.PENDING, LearningStatus.ARCHIVED) is S.ARCHIVED
    assert state_of(Approval.APPROVED, LearningStatus.SUSPENDED) is S.SUSPENDED
    assert state_of(Approval.APPROVED, LearningStatus.RETIRED) is S.RETIRED
    assert state_of(None, None) is S.DELETED
    assert approval_of(S.REJECTED) is Approval.REJECTED
    with pytest.raises(ValueError, match="not a live review state"):
        approval_of(S.DELETED)
