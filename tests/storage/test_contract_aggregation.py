"""Storage contract: what aggregation keeps between runs (clusters, proposals, change logs) and
history events that change no row."""

from __future__ import annotations

from dataclasses import replace

from reflexio.records import (
    Audit,
    ChangeLogRecord,
    ClusterRecord,
    Learning,
    LearningEvent,
    LearningKind,
    ProposalRecord,
)
from reflexio.storage import Storage


def cluster(members: tuple[int, ...], org: str = "o1", **fields: object) -> ClusterRecord:
    values: dict[str, object] = {"agent_version": "v1", "playbook_name": "playbook"}
    values.update(fields)
    return ClusterRecord(org_id=org, member_ids=members, fingerprint=f"fp{members}", **values)  # type: ignore[arg-type]


def test_clusters_round_trip_and_keep_their_ids(storage: Storage) -> None:
    saved = storage.save_clusters(
        "o1",
        "v1",
        "playbook",
        [cluster((1, 2), basis="m similarity 0.4500"), cluster((3,), agent_playbook_id=9)],
    )
    assert [c.id > 0 for c in saved] == [True, True]
    assert storage.list_clusters("o1", "v1", "playbook") == saved
    first = saved[0]
    changed = storage.save_clusters(
        "o1", "v1", "playbook", [replace(first, member_ids=(1, 2, 5), decided_fingerprint="x", basis="n")]
    )
    assert changed[0].id == first.id
    stored = {c.id: c for c in storage.list_clusters("o1", "v1", "playbook")}
    assert stored[first.id].member_ids == (1, 2, 5)
    assert stored[first.id].decided_fingerprint == "x" and stored[first.id].basis == "n"
    assert saved[0].basis == "m similarity 0.4500" and stored[saved[1].id].basis is None
    assert stored[saved[1].id].agent_playbook_id == 9 and stored[saved[1].id].revision_id is None


def test_removed_clusters_go(storage: Storage) -> None:
    a, b = storage.save_clusters("o1", "v1", "playbook", [cluster((1,)), cluster((2,))])
    storage.save_clusters("o1", "v1", "playbook", [], removed=[a.id])
    assert [c.id for c in storage.list_clusters("o1", "v1", "playbook")] == [b.id]


def test_clusters_are_kept_per_scope_and_org(storage: Storage) -> None:
    (mine,) = storage.save_clusters("o1", "v1", "playbook", [cluster((1,))])
    storage.save_clusters("o1", "v2", "playbook", [cluster((2,))])
    storage.save_clusters("o1", "v1", "other", [cluster((3,))])
    # A record naming another org is written under the scope of the call, never the record's.
    (theirs,) = storage.save_clusters("o2", "v1", "playbook", [cluster((4,), org="o1")])
    assert [c.member_ids for c in storage.list_clusters("o1", "v1", "playbook")] == [(1,)]
    assert theirs.org_id == "o2"
    # Another org cannot remove or overwrite my cluster by id.
    storage.save_clusters("o2", "v1", "playbook", [replace(mine, member_ids=(7,))], removed=[mine.id])
    assert [c.member_ids for c in storage.list_clusters("o1", "v1", "playbook")] == [(1,)]


def test_proposals_by_playbook_id(storage: Storage) -> None:
    storage.add_proposals(
        [
            ProposalRecord(
                org_id="o1", agent_playbook_id=10, cluster_id=1, member_ids=(1, 2), user_ids=("u1", "u2")
            ),
            ProposalRecord(
                org_id="o1",
                agent_playbook_id=11,
                cluster_id=1,
                member_ids=(1, 2, 3),
                user_ids=("u1", "u2", "u3"),
                revises_id=10,
                job_id=4,
            ),
            ProposalRecord(
                org_id="o2", agent_playbook_id=12, cluster_id=2, member_ids=(5,), user_ids=("u9",)
            ),
        ]
    )
    found = storage.get_proposals("o1", [11, 10, 12, 99])
    assert [p.agent_playbook_id for p in found] == [10, 11]
    assert found[1].revises_id == 10 and found[1].job_id == 4 and found[1].user_ids == ("u1", "u2", "u3")
    assert found[0].created_at > 0
    assert storage.get_proposals("o1", []) == []
    # A playbook rewritten in place from new evidence replaces its proposal.
    storage.add_proposals(
        [
            ProposalRecord(
                org_id="o1", agent_playbook_id=10, cluster_id=1, member_ids=(1, 2, 4), user_ids=("u1", "u4")
            )
        ]
    )
    (again,) = storage.get_proposals("o1", [10])
    assert again.member_ids == (1, 2, 4) and again.user_ids == ("u1", "u4")


def test_change_logs_newest_first_with_a_limit(storage: Storage) -> None:
    snapshot = {"agent_playbook_id": 1, "content": "check the cache", "agent_version": "v1"}
    first = storage.add_change_log(
        ChangeLogRecord(org_id="o1", agent_version="v1", playbook_name="playbook", added=[snapshot])
    )
    second = storage.add_change_log(
        ChangeLogRecord(
            org_id="o1",
            agent_version="v1",
            playbook_name="playbook",
            run_mode="full_archive",
            updated=[{"before": snapshot, "after": {**snapshot, "content": "clear the cache"}}],
            job_id=3,
        )
    )
    storage.add_change_log(ChangeLogRecord(org_id="o2", agent_version="v1", playbook_name="playbook"))
    storage.add_change_log(ChangeLogRecord(org_id="o1", agent_version="v2", playbook_name="playbook"))
    logs = storage.list_change_logs("o1", "v1", "playbook", limit=10)
    assert [log.id for log in logs] == [second.id, first.id]
    assert logs[1].added == [snapshot] and logs[1].removed == [] and logs[1].run_mode == "incremental"
    assert logs[0].updated[0]["after"]["content"] == "clear the cache" and logs[0].job_id == 3
    assert first.created_at > 0
    assert [log.id for log in storage.list_change_logs("o1", "v1", "playbook", limit=1)] == [second.id]


def test_events_that_change_no_row_are_history(storage: Storage) -> None:
    refused = LearningEvent(
        org_id="o1",
        learning_id=42,
        kind=LearningKind.AGENT_PLAYBOOK,
        event="refused:approve",
        actor="key:3",
        reason="current state is rejected",
    )
    storage.add_events([refused])
    storage.add_events([])
    (event,) = storage.list_events("o1", learning_ids=[42])
    assert (event.event, event.actor, event.reason) == (
        "refused:approve",
        "key:3",
        "current state is rejected",
    )
    assert event.created_at > 0
    assert storage.list_events("o2", learning_ids=[42]) == []


def test_clear_user_takes_the_user_out_of_agent_playbook_evidence(storage: Storage) -> None:
    rules = storage.save_learnings(
        [
            Learning(org_id=org, kind=LearningKind.USER_PLAYBOOK, user_id="gone", content="Ask first.")
            for org in ("o1", "o2")
        ],
        Audit(actor="test"),
    )
    mine, theirs = rules[0].id, rules[1].id
    storage.add_proposals(
        [
            ProposalRecord(
                org_id="o1",
                agent_playbook_id=10,
                cluster_id=1,
                member_ids=(100, mine, 300),
                user_ids=("a", "gone"),
            ),
            ProposalRecord(
                org_id="o1", agent_playbook_id=11, cluster_id=2, member_ids=(400, 500), user_ids=("a", "b")
            ),
            ProposalRecord(
                org_id="o2", agent_playbook_id=12, cluster_id=3, member_ids=(theirs,), user_ids=("gone",)
            ),
        ]
    )
    storage.clear_user("o1", "gone")
    ten, eleven = storage.get_proposals("o1", [10, 11])
    assert ten.member_ids == (100, 300) and ten.user_ids == ("a",)
    assert eleven.member_ids == (400, 500) and eleven.user_ids == ("a", "b")
    (other_org,) = storage.get_proposals("o2", [12])  # another org's "gone" is another person
    assert other_org.user_ids == ("gone",) and other_org.member_ids == (theirs,)
