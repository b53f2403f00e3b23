"""Storage contract: requests, interactions, exposures, configs, keys, judgements, users."""

from __future__ import annotations

import pytest

from reflexio.errors import ConflictError
from reflexio.filters import InteractionFilter, LearningFilter, RequestFilter
from reflexio.records import (
    ApiKeyRecord,
    Audit,
    Bookmark,
    EvaluationRecord,
    InteractionRecord,
    Job,
    Learning,
    LearningKind,
    RequestRecord,
)
from reflexio.storage import Storage


def publish(
    storage: Storage,
    org: str,
    request_id: str,
    user: str = "u1",
    session: str = "s1",
    texts: tuple[str, ...] = ("hello", "hi there"),
    created_at: int = 1_700_000_000,
) -> list[InteractionRecord]:
    request = RequestRecord(
        org_id=org,
        request_id=request_id,
        user_id=user,
        session_id=session,
        source="chat",
        agent_version="v1",
        created_at=created_at,
        payload_hash="h",
    )
    turns = [
        InteractionRecord(
            org_id=org,
            request_id=request_id,
            user_id=user,
            session_id=session,
            role="User" if i % 2 == 0 else "Agent",
            content=t,
            created_at=created_at,
            tools_used=[{"tool_name": "search", "tool_data": {"q": t}, "status": "success"}],
        )
        for i, t in enumerate(texts)
    ]
    return storage.insert_request(request, turns)


def test_requests_and_interactions_round_trip(storage: Storage) -> None:
    stored = publish(storage, "o1", "r1")
    assert [s.id for s in stored] == sorted(s.id for s in stored) and stored[0].id > 0
    assert storage.get_request("o1", "r1").session_id == "s1"  # type: ignore[union-attr]
    rows = storage.list_interactions("o1", InteractionFilter(request_ids=("r1",)))
    assert [r.content for r in rows] == ["hello", "hi there"]
    assert rows[0].tools_used == [{"tool_name": "search", "tool_data": {"q": "hello"}, "status": "success"}]
    assert rows[0].created_at == 1_700_000_000
    newest = storage.list_interactions("o1", InteractionFilter(user_id="u1"), limit=1, newest_first=True)
    assert newest[0].content == "hi there"
    after = storage.list_interactions("o1", InteractionFilter(user_id="u1", after_id=stored[0].id))
    assert [r.id for r in after] == [stored[1].id]


def test_a_request_id_is_stored_once_per_org(storage: Storage) -> None:
    publish(storage, "o1", "r1")
    with pytest.raises(ConflictError):
        publish(storage, "o1", "r1")
    publish(storage, "o2", "r1")
    assert len(storage.list_interactions("o1", InteractionFilter())) == 2


def test_log_queries_and_deletes_stay_in_the_org(storage: Storage) -> None:
    publish(storage, "o1", "r1", texts=("the parcel never arrived",))
    publish(storage, "o2", "r2", texts=("the parcel never arrived",))
    assert storage.get_request("o2", "r1") is None
    assert [r.request_id for r in storage.list_requests("o2", RequestFilter(), limit=10)] == ["r2"]
    assert [
        r.request_id for r, _ in storage.search_interactions("o2", InteractionFilter(), "parcel", limit=5)
    ] == ["r2"]
    assert storage.delete_log("o2", requests=RequestFilter(request_ids=("r1",))) == (0, 0)
    assert storage.delete_log("o2", interactions=InteractionFilter(user_id="u1")) == (0, 1)
    assert len(storage.list_interactions("o1", InteractionFilter())) == 1


def test_request_filters_and_paging(storage: Storage) -> None:
    for i in range(5):
        publish(storage, "o1", f"r{i}", session=f"s{i % 2}", created_at=1_000 + i)
    assert [r.request_id for r in storage.list_requests("o1", RequestFilter(), limit=2)] == [
        "r4",
        "r3",
    ]
    assert [r.request_id for r in storage.list_requests("o1", RequestFilter(), limit=2, offset=2)] == [
        "r2",
        "r1",
    ]
    assert [r.request_id for r in storage.list_requests("o1", RequestFilter(session_id="s1"), limit=9)] == [
        "r3",
        "r1",
    ]
    window = RequestFilter(created_after=1_001, created_before=1_003, source="CHAT")
    assert [r.request_id for r in storage.list_requests("o1", window, limit=9)] == [
        "r3",
        "r2",
        "r1",
    ]


def test_interaction_search_ranks_and_filters(storage: Storage) -> None:
    publish(storage, "o1", "r1", user="u1", texts=("I want a refund for my headphones", "Sure"))
    publish(storage, "o1", "r2", user="u2", texts=("Refund the blender please", "Done"))
    hits = storage.search_interactions("o1", InteractionFilter(user_id="u1"), "refund headphones", limit=5)
    assert [r.content for r, _ in hits] == ["I want a refund for my headphones"]
    assert hits[0][1] > 0
    assert storage.search_interactions("o1", InteractionFilter(), "   ", limit=5) == []


def test_deleting_a_request_deletes_its_interactions(storage: Storage) -> None:
    publish(storage, "o1", "r1", texts=("where is my parcel", "on its way"))
    publish(storage, "o1", "r2", session="s2", texts=("parcel lost", "sorry"))
    assert storage.delete_log("o1", requests=RequestFilter(session_id="s2")) == (1, 2)
    assert storage.get_request("o1", "r2") is None
    assert {r.request_id for r in storage.list_interactions("o1", InteractionFilter())} == {"r1"}
    assert [
        r.request_id for r, _ in storage.search_interactions("o1", InteractionFilter(), "parcel", limit=5)
    ] == ["r1"]


def test_turns_deleted_before_and_after_a_search_leave_full_text_search(storage: Storage) -> None:
    def found() -> list[str]:
        return [
            r.content for r, _ in storage.search_interactions("o1", InteractionFilter(), "parcel", limit=9)
        ]

    publish(storage, "o1", "r1", texts=("parcel lost",))
    storage.delete_log("o1", requests=RequestFilter(request_ids=("r1",)))  # before any search
    publish(storage, "o1", "r2", texts=("parcel found",))
    publish(storage, "o1", "r3", texts=("parcel delayed",))
    assert sorted(found()) == ["parcel delayed", "parcel found"]
    storage.delete_log("o1", requests=RequestFilter(request_ids=("r2",)))  # after a search
    assert found() == ["parcel delayed"]


def test_transaction_rolls_back_request_and_jobs_together(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        publish(tx, "o1", "r1")
        tx.enqueue_jobs([Job(org_id="o1", task="extract", key="u1", request_id="r1")])
        raise RuntimeError("crash before commit")
    assert storage.get_request("o1", "r1") is None
    assert storage.list_interactions("o1", InteractionFilter()) == []
    assert storage.list_jobs("o1") == []
    with storage.transaction() as tx:
        publish(tx, "o1", "r1")
        tx.enqueue_jobs([Job(org_id="o1", task="extract", key="u1", request_id="r1")])
    assert storage.get_request("o1", "r1") is not None
    assert [j.request_id for j in storage.list_jobs("o1")] == ["r1"]


def test_org_configs_and_bookmarks(storage: Storage) -> None:
    assert storage.get_org_config("o1") is None
    storage.put_org_config("o1", {"window_size": 4, "nested": {"a": [1, 2]}})
    storage.put_org_config("o1", {"window_size": 6})
    assert storage.get_org_config("o1") == {"window_size": 6}
    assert storage.get_org_config("o2") is None
    assert storage.get_bookmark("o1", "u1", "profile") is None
    storage.put_bookmark(Bookmark(org_id="o1", user_id="u1", extractor="profile", last_interaction_id=7))
    storage.put_bookmark(Bookmark(org_id="o1", user_id="u1", extractor="profile", last_interaction_id=9))
    assert storage.get_bookmark("o1", "u1", "profile").last_interaction_id == 9  # type: ignore[union-attr]
    assert storage.get_bookmark("o2", "u1", "profile") is None


def test_api_keys_are_found_by_hash_and_revocable(storage: Storage) -> None:
    assert not storage.has_api_keys()
    key = storage.add_api_key(ApiKeyRecord(org_id="o1", key_hash="abc", prefix="rfx_ab", name="ci"))
    storage.add_api_key(ApiKeyRecord(org_id="o2", key_hash="def", prefix="rfx_de"))
    assert storage.has_api_keys()
    assert storage.find_api_key("abc").org_id == "o1"  # type: ignore[union-attr]
    assert storage.find_api_key("nope") is None
    assert [k.prefix for k in storage.list_api_keys("o1")] == ["rfx_ab"]
    assert len(storage.list_api_keys()) == 2
    assert storage.revoke_api_key(key.id) and not storage.revoke_api_key(key.id)
    assert storage.find_api_key("abc") is None
    assert storage.list_api_keys("o1")[0].revoked_at is not None


def test_an_active_key_is_made_a_reviewer_and_back(storage: Storage) -> None:
    key = storage.add_api_key(ApiKeyRecord(org_id="o1", key_hash="abc", prefix="rfx_ab"))
    other = storage.add_api_key(ApiKeyRecord(org_id="o1", key_hash="def", prefix="rfx_de"))
    assert key.reviewer is False
    assert storage.set_api_key_reviewer(key.id, True)
    assert storage.find_api_key("abc").reviewer is True  # type: ignore[union-attr]
    assert storage.find_api_key("def").reviewer is False  # type: ignore[union-attr]
    assert storage.set_api_key_reviewer(key.id, True)  # already one: still an active key
    assert storage.set_api_key_reviewer(key.id, False)
    assert storage.find_api_key("abc").reviewer is False  # type: ignore[union-attr]
    assert not storage.set_api_key_reviewer(other.id + 100, True)  # no such key
    storage.revoke_api_key(other.id)
    assert not storage.set_api_key_reviewer(other.id, True)  # revoked keys stay as they were
    assert storage.list_api_keys("o1")[1].reviewer is False


def test_evaluations_are_listed_by_kind_and_scope(storage: Storage) -> None:
    storage.add_evaluations(
        [
            EvaluationRecord(
                org_id="o1",
                kind="session",
                user_id="u1",
                session_id="s1",
                agent_version="v1",
                result={"is_success": True},
            ),
            EvaluationRecord(
                org_id="o1",
                kind="session",
                user_id="u2",
                session_id="s2",
                agent_version="v1",
                result={"is_success": False},
            ),
            EvaluationRecord(
                org_id="o1",
                kind="learning",
                user_id="u1",
                session_id="s1",
                learning_kind="profile",
                learning_id="p1",
                result={"impact": "positive"},
            ),
            EvaluationRecord(org_id="o2", kind="session", user_id="u1", session_id="s1", result={}),
        ]
    )
    sessions = storage.list_evaluations("o1", kind="session")
    assert [e.session_id for e in sessions] == ["s2", "s1"]
    assert storage.list_evaluations("o1", kind="session", user_id="u1")[0].result == {"is_success": True}
    assert storage.list_evaluations("o1", kind="learning")[0].learning_id == "p1"


def test_session_verdicts_are_tallied_per_day_where_stored(storage: Storage) -> None:
    day, start = 86_400, 1_700_000_000

    def verdict(at: float, result: dict[str, object], org: str = "o1", agent: str = "v1") -> EvaluationRecord:
        return EvaluationRecord(
            org_id=org, kind="session", session_id=f"s{at}", agent_version=agent, result=result, created_at=at
        )

    storage.add_evaluations(
        [
            verdict(start - 10, {"is_success": True}),  # before the window
            verdict(start + 5, {"is_success": True, "number_of_correction_per_session": 2}),
            verdict(
                start + 60,
                {"is_success": False, "is_escalated": True, "regular_vs_shadow": "shadow_is_better"},
            ),
            verdict(start + 2 * day + 1, {"is_success": True, "regular_vs_shadow": "regular_is_better"}),
            verdict(start + 2 * day + 2, {"is_success": False}, agent="v2"),
            verdict(start + 3, {"is_success": True}, org="o2"),
            EvaluationRecord(org_id="o1", kind="learning", result={"is_success": True}, created_at=start + 9),
        ]
    )
    tallies = storage.session_verdict_days("o1", since=start, day_seconds=day)
    assert [(t.day, t.judged, t.succeeded) for t in tallies] == [(0, 2, 1), (2, 2, 1)]
    first = tallies[0]
    assert (first.corrections, first.escalated, first.shadow_judged, first.shadow_won) == (2, 1, 1, 1)
    assert (tallies[1].shadow_judged, tallies[1].shadow_won) == (1, 0)
    one = storage.session_verdict_days("o1", since=start, day_seconds=day, agent_version="v2")
    assert [(t.day, t.judged, t.succeeded) for t in one] == [(2, 1, 0)]
    assert storage.session_verdict_days("o3", since=start, day_seconds=day) == []


def test_clear_user_removes_everything_of_that_user_only(storage: Storage) -> None:
    publish(storage, "o1", "r1", user="gone", session="sg")
    publish(storage, "o1", "r2", user="kept", session="sk")
    publish(storage, "o2", "r3", user="gone", session="sg")
    rows = storage.save_learnings(
        [
            Learning(org_id="o1", kind=LearningKind.PROFILE, user_id="gone", content="Lives in Oslo"),
            Learning(
                org_id="o1",
                kind=LearningKind.USER_PLAYBOOK,
                user_id="gone",
                content="Answer in Norwegian",
            ),
            Learning(org_id="o1", kind=LearningKind.PROFILE, user_id="kept", content="Lives in Rome"),
            Learning(org_id="o1", kind=LearningKind.AGENT_PLAYBOOK, content="Greet politely"),
        ],
        Audit(),
    )
    storage.add_exposures("o1", "sg", [("profile", rows[0].wire_id)])
    storage.add_evaluations(
        [EvaluationRecord(org_id="o1", kind="session", user_id="gone", session_id="sg", result={})]
    )
    storage.put_bookmark(Bookmark(org_id="o1", user_id="gone", extractor="profile", last_interaction_id=3))
    counts = storage.clear_user("o1", "gone")
    assert counts["requests"] == 1 and counts["interactions"] == 2
    assert counts["profiles"] == 1 and counts["user_playbooks"] == 1 and counts["agent_playbooks"] == 0
    assert storage.list_interactions("o1", InteractionFilter(user_id="gone")) == []
    assert storage.get_learnings("o1", LearningFilter(user_id="gone")) == []
    assert storage.list_events("o1", user_id="gone") == []
    assert storage.list_evaluations("o1", kind="session", user_id="gone") == []
    assert storage.get_bookmark("o1", "gone", "profile") is None
    assert storage.list_exposures("o1", "sg") == set()
    assert storage.count_learnings("o1", LearningFilter()) == 2
    assert len(storage.list_interactions("o2", InteractionFilter(user_id="gone"))) == 2
    hits = storage.search_candidates("o1", _fts("Oslo Norwegian Rome"))
    assert {h.learning.content for h in hits} == {"Lives in Rome"}


def _fts(text: str):  # type: ignore[no-untyped-def]
    from reflexio.filters import CandidateQuery, SearchMode

    return CandidateQuery(filters=(LearningFilter(),), text=text, mode=SearchMode.FTS)
