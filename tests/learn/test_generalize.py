"""What an aggregation run decides per cluster: the gate, change detection and the lifecycle."""

from __future__ import annotations

from reflexio.learn.cluster import Cluster
from reflexio.learn.generalize import Policy, Proposed, Stored, Verdict, plan
from reflexio.learn.review import ReviewState

S = ReviewState
AUTHORS = {1: "ann", 2: "bob", 3: "ann", 4: "cid", 5: "dan"}
POLICY = Policy(min_users=2, min_cluster_size=2, trigger_count=1)


def _proposed(
    pid: int, state: ReviewState, members: tuple[int, ...], *, by_reviewer: bool = False
) -> Proposed:
    return Proposed(pid, state, frozenset(members), frozenset(AUTHORS[i] for i in members), by_reviewer)


def _one(
    cluster: Cluster, stored: Stored | None = None, policy: Policy = POLICY
) -> tuple[Verdict, int | None]:
    work = plan([cluster], {cluster.key: stored} if stored else {}, AUTHORS, policy)[0]
    assert work.cluster is cluster
    assert work.users == frozenset(AUTHORS[i] for i in cluster.member_ids)
    return work.verdict, work.target


def test_unchanged_clusters_cost_nothing() -> None:
    c = Cluster(1, (1, 2))
    assert _one(c, Stored(1, aggregated=c.fingerprint)) == (Verdict.UNCHANGED, None)
    assert not Verdict.UNCHANGED.needs_text


def test_one_persons_lessons_never_pass_the_gate() -> None:
    assert _one(Cluster(0, (1, 3))) == (Verdict.BELOW_GATE, None)  # two playbooks, one user
    assert _one(Cluster(0, (1, 2)), policy=Policy(min_users=3)) == (Verdict.BELOW_GATE, None)
    assert _one(Cluster(0, (1, 2)), policy=Policy(min_users=1, min_cluster_size=3)) == (
        Verdict.BELOW_GATE,
        None,
    )


def test_falling_below_the_gate_retires_a_pending_playbook_but_not_an_approved_one() -> None:
    pending = Stored(1, aggregated="old", playbook=_proposed(10, S.PENDING, (1, 2)))
    assert _one(Cluster(1, (1,)), pending) == (Verdict.BELOW_GATE, 10)
    approved = Stored(1, aggregated="old", playbook=_proposed(10, S.APPROVED, (1, 2)))
    assert _one(Cluster(1, (1,)), approved) == (Verdict.BELOW_GATE, None)
    edited = Stored(1, aggregated="old", playbook=_proposed(10, S.PENDING, (1, 2), by_reviewer=True))
    assert _one(Cluster(1, (1,)), edited) == (Verdict.BELOW_GATE, None)
    revised = Stored(
        1,
        aggregated="old",
        playbook=_proposed(10, S.APPROVED, (1, 2)),
        revision=_proposed(11, S.PENDING, (1, 2, 4)),
    )
    assert _one(Cluster(1, (1,)), revised) == (Verdict.BELOW_GATE, 11)


def test_a_new_cluster_past_the_gate_is_proposed() -> None:
    verdict, target = _one(Cluster(0, (1, 2)))
    assert (verdict, target) == (Verdict.PROPOSE, None) and verdict.needs_text


def test_pending_playbooks_are_updated_in_place() -> None:
    stored = Stored(1, aggregated="old", playbook=_proposed(10, S.PENDING, (1, 2)))
    assert _one(Cluster(1, (1, 2, 4)), stored) == (Verdict.UPDATE, 10)


def test_approved_playbooks_are_never_overwritten_only_revised() -> None:
    stored = Stored(1, aggregated="old", playbook=_proposed(10, S.APPROVED, (1, 2)))
    assert _one(Cluster(1, (1, 2, 4)), stored) == (Verdict.REVISE, 10)
    reviewed = Stored(1, aggregated="old", playbook=_proposed(10, S.PENDING, (1, 2), by_reviewer=True))
    assert _one(Cluster(1, (1, 2, 4)), reviewed) == (Verdict.REVISE, 10)


def test_a_pending_revision_is_updated_instead_of_stacking_revisions() -> None:
    stored = Stored(
        1,
        aggregated="old",
        playbook=_proposed(10, S.APPROVED, (1, 2)),
        revision=_proposed(11, S.PENDING, (1, 2, 4)),
    )
    assert _one(Cluster(1, (1, 2, 4, 5)), stored) == (Verdict.UPDATE, 11)


def test_an_approved_revision_becomes_the_playbook() -> None:
    stored = Stored(
        1,
        aggregated="old",
        playbook=_proposed(10, S.ARCHIVED, (1, 2)),
        revision=_proposed(11, S.APPROVED, (1, 2, 4)),
    )
    assert _one(Cluster(1, (1, 2, 4, 5)), stored) == (Verdict.REVISE, 11)


def test_rejections_hold_until_new_users_teach_the_lesson() -> None:
    stored = Stored(1, aggregated="old", playbook=_proposed(10, S.REJECTED, (1, 2)))
    assert _one(Cluster(1, (1, 2, 3)), stored) == (Verdict.SAME_EVIDENCE, 10)  # ann again: same users
    assert _one(Cluster(1, (1, 2, 4)), stored) == (Verdict.PROPOSE, 10)  # cid is new: linked to 10
    revision = Stored(
        1,
        aggregated="old",
        playbook=_proposed(10, S.APPROVED, (1, 2)),
        revision=_proposed(11, S.REJECTED, (1, 2, 4)),
    )
    assert _one(Cluster(1, (1, 2, 4, 3)), revision) == (Verdict.SAME_EVIDENCE, 11)
    assert _one(Cluster(1, (1, 2, 4, 5)), revision) == (Verdict.REVISE, 10)


def test_deleted_playbooks_are_forgotten() -> None:
    stored = Stored(1, aggregated="old", playbook=_proposed(10, S.DELETED, (1, 2)))
    assert _one(Cluster(1, (1, 2, 4)), stored) == (Verdict.PROPOSE, None)


def test_few_changes_store_membership_without_a_model_call() -> None:
    policy = Policy(min_users=2, trigger_count=2)
    stored = Stored(1, aggregated="old", playbook=_proposed(10, S.APPROVED, (1, 2)))
    assert _one(Cluster(1, (1, 2, 4)), stored, policy) == (Verdict.FEW_CHANGES, 10)
    assert _one(Cluster(1, (1, 2, 4, 5)), stored, policy) == (Verdict.REVISE, 10)
    assert not Verdict.FEW_CHANGES.needs_text
