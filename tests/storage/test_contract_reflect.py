"""Storage contract of Reflect's tables: outcomes, exposure decisions, verdicts, actions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reflexio.filters import LearningFilter
from reflexio.records import (
    Audit,
    EvaluationRecord,
    ExposureRecord,
    Learning,
    LearningKind,
    OutcomeRecord,
    ReflectionActionRecord,
)
from reflexio.storage import Storage


def outcome(org: str, session: str, result: str, user: str = "u1", at: int = 1_700_000_000) -> OutcomeRecord:
    return OutcomeRecord(
        org_id=org, session_id=session, user_id=user, outcome=result, occurred_at=at, outcome_id="x"
    )


def test_outcome_revisions_count_per_session_and_the_latest_wins(storage: Storage) -> None:
    first = storage.add_outcome(outcome("o1", "s1", "failure", at=100))
    second = storage.add_outcome(outcome("o1", "s1", "success", at=200))
    other = storage.add_outcome(outcome("o1", "s2", "failure", at=150))
    assert (first.revision, second.revision, other.revision) == (1, 2, 1)
    latest = storage.list_outcomes("o1")
    assert [(o.session_id, o.outcome, o.revision) for o in latest] == [
        ("s1", "success", 2),
        ("s2", "failure", 1),
    ]
    history = storage.list_outcomes("o1", session_ids=["s1"], latest_only=False)
    assert [o.revision for o in history] == [2, 1]


def test_outcomes_are_filtered_and_paged(storage: Storage) -> None:
    for i in range(5):
        row = outcome("o1", f"s{i}", "success" if i % 2 else "failure", user=f"u{i % 2}", at=100 + i)
        row.label = "ticket" if i < 3 else None
        row.metadata = {"i": i}
        storage.add_outcome(row)
    assert [o.session_id for o in storage.list_outcomes("o1", outcome="success")] == ["s3", "s1"]
    assert [o.session_id for o in storage.list_outcomes("o1", user_id="u0")] == ["s4", "s2", "s0"]
    assert [o.session_id for o in storage.list_outcomes("o1", label="ticket")] == ["s2", "s1", "s0"]
    assert [o.session_id for o in storage.list_outcomes("o1", occurred_after=101, occurred_before=103)] == [
        "s3",
        "s2",
        "s1",
    ]
    assert [o.session_id for o in storage.list_outcomes("o1", limit=2, offset=1)] == ["s3", "s2"]
    assert storage.list_outcomes("o1", session_ids=["s4"])[0].metadata == {"i": 4}


def test_outcomes_and_decisions_stay_in_their_org(storage: Storage) -> None:
    storage.add_outcome(outcome("o1", "s1", "success"))
    storage.record_exposures(
        [ExposureRecord(org_id="o1", session_id="s1", kind="user_playbook", learning_id="1")]
    )
    assert storage.list_outcomes("o2") == []
    assert storage.learning_exposures("o2", "user_playbook", ["1"]) == []
    assert storage.most_exposed("o2") == []
    assert storage.add_outcome(outcome("o2", "s1", "failure")).revision == 1


def test_the_first_decision_of_a_session_stands(storage: Storage) -> None:
    decide = [
        ExposureRecord(
            org_id="o1",
            session_id="s1",
            user_id="u1",
            kind="agent_playbook",
            learning_id="7",
            withheld=True,
            holdout_rate=0.1,
        ),
        ExposureRecord(org_id="o1", session_id="s2", user_id="u2", kind="agent_playbook", learning_id="7"),
        ExposureRecord(org_id="o1", session_id="s1", user_id="u1", kind="agent_playbook", learning_id="8"),
    ]
    storage.record_exposures(decide)
    storage.record_exposures(
        [ExposureRecord(org_id="o1", session_id="s1", user_id="u1", kind="agent_playbook", learning_id="7")]
    )
    found = storage.learning_exposures("o1", "agent_playbook", ["7"])
    assert [(e.session_id, e.user_id, e.withheld, e.holdout_rate) for e in found] == [
        ("s1", "u1", True, 0.1),
        ("s2", "u2", False, 0.0),
    ]
    assert storage.list_exposures("o1", "s1") == {("agent_playbook", "7"), ("agent_playbook", "8")}
    assert storage.most_exposed("o1")[0] == ("agent_playbook", "7", 2)
    assert storage.most_exposed("o1", kind="profile") == []


def verdict(
    org: str, session: str, kind: str, learning: str | None = None, mark: str = "a"
) -> EvaluationRecord:
    return EvaluationRecord(
        org_id=org,
        kind=kind,
        user_id="u1",
        session_id=session,
        learning_kind="user_playbook" if learning else None,
        learning_id=learning,
        result={"mark": mark},
    )


def test_replacing_a_sessions_verdicts_keeps_other_kinds_and_sessions(storage: Storage) -> None:
    storage.add_evaluations(
        [
            verdict("o1", "s1", "session"),
            verdict("o1", "s1", "learning", "1"),
            verdict("o1", "s2", "learning", "1"),
        ]
    )
    storage.replace_evaluations(
        "o1", "u1", "s1", ["learning"], [verdict("o1", "s1", "learning", "2", mark="b")]
    )
    learning = storage.find_evaluations("o1", kind="learning")
    assert sorted((e.session_id, e.learning_id, e.result["mark"]) for e in learning) == [
        ("s1", "2", "b"),
        ("s2", "1", "a"),
    ]
    assert len(storage.find_evaluations("o1", kind="session", session_ids=["s1"])) == 1
    assert [
        e.session_id
        for e in storage.find_evaluations(
            "o1", kind="learning", learning_kind="user_playbook", learning_ids=["1"]
        )
    ] == ["s2"]
    assert storage.find_evaluations("o2", kind="learning") == []


def test_a_rolled_back_transaction_keeps_nothing(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.add_outcome(outcome("o1", "s1", "success"))
        tx.record_exposures([ExposureRecord(org_id="o1", session_id="s1", kind="profile", learning_id="p")])
        tx.replace_evaluations("o1", "u1", "s1", ["session"], [verdict("o1", "s1", "session")])
        raise RuntimeError("boom")
    assert storage.list_outcomes("o1") == []
    assert storage.learning_exposures("o1", "profile", ["p"]) == []
    assert storage.find_evaluations("o1", kind="session") == []


def action(org: str, learning_id: int, what: str = "retire") -> ReflectionActionRecord:
    return ReflectionActionRecord(
        org_id=org,
        learning_id=learning_id,
        kind="agent_playbook",
        action=what,
        reason="hurt 3 sessions",
        evidence={"hurt": 3},
        status_before="current",
        status_after="retired",
    )


def test_reflection_actions_round_trip_and_revert_once(storage: Storage) -> None:
    first, second = storage.add_reflection_actions([action("o1", 5), action("o1", 6, "suspend")])
    assert first.id and second.id > first.id and first.evidence == {"hurt": 3}
    assert [a.id for a in storage.list_reflection_actions("o1")] == [second.id, first.id]
    assert [a.id for a in storage.list_reflection_actions("o1", learning_ids=[5])] == [first.id]
    assert storage.revert_reflection_action("o1", first.id, by="key:abc", note="it was right") is True
    assert storage.revert_reflection_action("o1", first.id, by="key:abc", note=None) is False
    assert storage.revert_reflection_action("o2", second.id, by="x", note=None) is False
    (reverted,) = storage.list_reflection_actions("o1", ids=[first.id])
    assert (reverted.reverted_by, reverted.revert_note) == (
        "key:abc",
        "it was right",
    ) and reverted.reverted_at
    assert [a.id for a in storage.list_reflection_actions("o1", include_reverted=False)] == [second.id]
    assert storage.list_reflection_actions("o2") == []
    assert storage.list_reflection_actions("o1", related_learning_ids=[5]) == []
    (revision,) = storage.add_reflection_actions(
        [replace(action("o1", 5, "propose_revision"), related_learning_id=9)]
    )
    assert [a.id for a in storage.list_reflection_actions("o1", related_learning_ids=[9])] == [revision.id]
    assert storage.list_reflection_actions("o2", related_learning_ids=[9]) == []


def test_clearing_a_user_removes_their_outcomes_and_the_actions_on_their_learnings(storage: Storage) -> None:
    (mine,) = storage.save_learnings(
        [Learning(org_id="o1", kind=LearningKind.USER_PLAYBOOK, user_id="u1", content="ask first")],
        audit=Audit(),
    )
    (theirs,) = storage.save_learnings(
        [Learning(org_id="o1", kind=LearningKind.USER_PLAYBOOK, user_id="u2", content="ask first")],
        audit=Audit(),
    )
    storage.add_reflection_actions([action("o1", mine.id), action("o1", theirs.id)])
    storage.add_outcome(outcome("o1", "s1", "success", user="u1"))
    storage.add_outcome(outcome("o1", "s2", "success", user="u2"))
    counts = storage.clear_user("o1", "u1")
    assert counts["outcomes"] == 1
    assert [o.user_id for o in storage.list_outcomes("o1")] == ["u2"]
    assert [a.learning_id for a in storage.list_reflection_actions("o1")] == [theirs.id]
    assert storage.get_learnings("o1", LearningFilter(ids=(theirs.id,)))
