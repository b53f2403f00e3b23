"""Storage contract: learnings, their vectors, history, filters and search candidates.

Runs on both engines (SQLite, PostgreSQL) through the ``storage`` fixture.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from tests.storage.filter_oracle import matches

from reflexio.errors import ConflictError, NotFoundError, ValidationError
from reflexio.filters import CandidateQuery, LearningFilter, SearchMode
from reflexio.records import (
    Approval,
    Audit,
    Learning,
    LearningKind,
    LearningStatus,
)
from reflexio.storage import Storage

P, U, A = LearningKind.PROFILE, LearningKind.USER_PLAYBOOK, LearningKind.AGENT_PLAYBOOK


@pytest.fixture
def storage(search_storage: Storage) -> Storage:
    """Every backend, PostgreSQL also with every search in SQL (``SEARCH_BACKENDS``)."""
    return search_storage


def profile(org: str, user: str, content: str, **kw: object) -> Learning:
    return Learning(org_id=org, kind=P, user_id=user, content=content, **kw)  # type: ignore[arg-type]


def query(
    storage: Storage,
    text: str,
    *filters: LearningFilter,
    mode: SearchMode = SearchMode.HYBRID,
    limit: int = 10,
) -> CandidateQuery:
    embedder = storage.embedder  # type: ignore[attr-defined]
    vector = embedder.embed([text], kind="query")[0] if mode is not SearchMode.FTS else None
    return CandidateQuery(
        filters=filters, text=text, vector=vector, embed_model=embedder.name, limit=limit, mode=mode
    )


def test_insert_assigns_ids_defaults_and_vectors(storage: Storage) -> None:
    rows = storage.save_learnings(
        [
            profile("o1", "u1", "Lives in Lisbon"),
            Learning(
                org_id="o1",
                kind=A,
                content="Confirm the order number before refunding",
                agent_version="v1",
            ),
        ],
        Audit(actor="test"),
    )
    assert [r.id > 0 for r in rows] == [True, True]
    assert rows[0].profile_id and rows[1].profile_id is None
    assert rows[1].approval is Approval.PENDING
    for row in rows:
        assert row.embedding is not None and row.embedding.shape == (storage.embedder.dim,)  # type: ignore[attr-defined]
        assert row.embed_model == storage.embedder.name  # type: ignore[attr-defined]
        assert row.created_at > 0 and row.updated_at >= row.created_at
    fetched = storage.get_learnings("o1", LearningFilter(ids=(rows[0].id,)))
    assert fetched[0].content == "Lives in Lisbon"
    assert np.allclose(fetched[0].embedding, rows[0].embedding)  # type: ignore[arg-type]


def test_changing_text_recomputes_the_vector_and_other_fields_keep_it(storage: Storage) -> None:
    (row,) = storage.save_learnings([profile("o1", "u1", "Prefers tea")], Audit())
    (retagged,) = storage.save_learnings([row.copy(tags=["drinks"])], Audit())
    assert np.array_equal(retagged.embedding, row.embedding)  # type: ignore[arg-type]
    (edited,) = storage.save_learnings([retagged.copy(content="Prefers strong black coffee")], Audit())
    assert edited.text_hash != row.text_hash
    assert not np.allclose(edited.embedding, row.embedding)  # type: ignore[arg-type]
    expected = storage.embedder.embed(["Prefers strong black coffee"])[0]  # type: ignore[attr-defined]
    assert np.allclose(edited.embedding, expected, atol=1e-5)  # type: ignore[arg-type]
    stored = storage.get_learnings("o1", LearningFilter(ids=(row.id,)))[0]
    assert np.allclose(stored.embedding, expected, atol=1e-5)  # type: ignore[arg-type]
    hits = storage.search_candidates("o1", query(storage, "coffee", LearningFilter(kinds=(P,))))
    assert [h.learning.id for h in hits if h.fts_rank] == [row.id]
    assert not storage.search_candidates(
        "o1", query(storage, "tea", LearningFilter(kinds=(P,)), mode=SearchMode.FTS)
    )


def test_empty_learning_is_refused(storage: Storage) -> None:
    with pytest.raises(ValidationError):
        storage.save_learnings([profile("o1", "u1", "  ")], Audit())


def test_profile_ids_are_unique_per_org_not_globally(storage: Storage) -> None:
    storage.save_learnings([profile("o1", "u1", "a", profile_id="p-1")], Audit())
    storage.save_learnings([profile("o2", "u1", "b", profile_id="p-1")], Audit())
    with pytest.raises(ConflictError):
        storage.save_learnings([profile("o1", "u2", "c", profile_id="p-1")], Audit())
    assert storage.count_learnings("o1", LearningFilter()) == 1


def test_orgs_never_see_each_others_learnings(storage: Storage) -> None:
    (mine,) = storage.save_learnings([profile("org-a", "u1", "Allergic to peanuts")], Audit())
    storage.save_learnings([profile("org-b", "u1", "Allergic to peanuts")], Audit())
    assert storage.get_learnings("org-b", LearningFilter(ids=(mine.id,))) == []
    with pytest.raises(NotFoundError):
        storage.save_learnings([mine.copy(org_id="org-b", content="hijacked")], Audit())
    assert (
        storage.update_learnings(
            "org-b", LearningFilter(ids=(mine.id,)), {"status": LearningStatus.ARCHIVED}, Audit()
        )
        == []
    )
    assert storage.delete_learnings("org-b", LearningFilter(ids=(mine.id,)), Audit()) == 0
    hits = storage.search_candidates("org-b", query(storage, "peanuts", LearningFilter()))
    assert all(h.learning.org_id == "org-b" for h in hits) and len(hits) == 1
    assert storage.get_learnings("org-a", LearningFilter(ids=(mine.id,)))[0].content == "Allergic to peanuts"
    assert storage.list_events("org-b", learning_ids=[mine.id]) == []


def test_updates_record_history(storage: Storage) -> None:
    (row,) = storage.save_learnings(
        [Learning(org_id="o1", kind=A, content="Ask before deleting files", agent_version="v1")],
        Audit(actor="seed"),
    )
    changed = storage.update_learnings(
        "o1",
        LearningFilter(ids=(row.id,)),
        {"approval": Approval.APPROVED},
        Audit(actor="reviewer", reason="looks right"),
    )
    assert changed == [row.id]
    storage.save_learnings(
        [row.copy(content="Ask before deleting or moving files", approval=Approval.APPROVED)],
        Audit(actor="editor"),
    )
    events = storage.list_events("o1", learning_ids=[row.id])
    assert [e.event for e in events] == ["updated", "approved", "created"]
    assert events[1].actor == "reviewer" and events[1].reason == "looks right"
    assert events[1].before == {"approval": "pending"} and events[1].after == {"approval": "approved"}
    assert events[0].before["content"] == "Ask before deleting files"  # type: ignore[index]
    assert events[0].after["content"] == "Ask before deleting or moving files"  # type: ignore[index]
    decided = storage.list_events("o1", events=["approved", "rejected"])
    assert [(e.learning_id, e.event) for e in decided] == [(row.id, "approved")]
    assert storage.list_events("o1", events=[]) == []


def test_text_fields_cannot_be_bulk_updated(storage: Storage) -> None:
    with pytest.raises(ValidationError):
        storage.update_learnings("o1", LearningFilter(), {"content": "x"}, Audit())


def test_delete_removes_rows_from_both_search_arms(storage: Storage) -> None:
    rows = storage.save_learnings(
        [profile("o1", "u1", "Owns a golden retriever"), profile("o1", "u1", "Plays chess")],
        Audit(),
    )
    f = LearningFilter(kinds=(P,), user_id="u1")
    before = storage.search_candidates("o1", query(storage, "golden retriever dog", f))
    assert rows[0].id in {h.learning.id for h in before}
    assert storage.delete_learnings("o1", LearningFilter(ids=(rows[0].id,)), Audit(actor="gdpr")) == 1
    for mode in SearchMode:
        hits = storage.search_candidates("o1", query(storage, "golden retriever dog", f, mode=mode))
        assert rows[0].id not in {h.learning.id for h in hits}
    assert storage.list_events("o1", learning_ids=[rows[0].id])[0].event == "deleted"


def test_candidates_carry_both_scores_and_respect_each_filter(storage: Storage) -> None:
    storage.save_learnings(
        [
            profile("o1", "u1", "Uses Linux exclusively, never macOS"),
            profile("o1", "u2", "Uses Linux at work"),
            Learning(
                org_id="o1",
                kind=A,
                content="Recommend Linux-friendly laptops",
                agent_version="v1",
                approval=Approval.APPROVED,
            ),
            Learning(
                org_id="o1",
                kind=A,
                content="Suggest Linux laptops",
                agent_version="v1",
                approval=Approval.REJECTED,
            ),
            Learning(
                org_id="o1",
                kind=A,
                content="Linux laptops for v2",
                agent_version="v2",
                approval=Approval.APPROVED,
            ),
        ],
        Audit(),
    )
    filters = (
        LearningFilter(kinds=(P,), user_id="u1", statuses=(LearningStatus.CURRENT,)),
        LearningFilter(kinds=(A,), agent_version="v1", approvals=(Approval.APPROVED, Approval.PENDING)),
    )
    hits = storage.search_candidates("o1", query(storage, "which laptop for linux", *filters))
    by_filter = {i: [h.learning for h in hits if h.filter_index == i] for i in (0, 1)}
    assert [r.content for r in by_filter[0]] == ["Uses Linux exclusively, never macOS"]
    assert [r.content for r in by_filter[1]] == ["Recommend Linux-friendly laptops"]
    for hit in hits:
        assert hit.fts_score is not None and hit.fts_score > 0
        assert hit.fts_norm is not None and 0 < hit.fts_norm <= 1
        assert hit.vector_score is not None and -1 <= hit.vector_score <= 1


def test_filter_before_ranking_finds_an_old_row_among_many_newer(storage: Storage) -> None:
    n = 100_000
    embedder = storage.embedder  # type: ignore[attr-defined]
    text = "Keeps bees on the roof of the apartment"
    vector = embedder.embed([text])[0]
    seed = profile("o1", "old-user", text, created_at=1_000, updated_at=1_000)
    (old,) = storage.save_learnings([seed], Audit())
    template = profile("o1", "crowd", text, embedding=vector, embed_model=embedder.name)
    template = template.copy(text_hash=template.computed_text_hash())
    batch = [template.copy(created_at=2_000_000_000 + i, updated_at=2_000_000_000 + i) for i in range(n)]
    storage.save_learnings(batch, Audit(actor="bulk"))
    f = LearningFilter(kinds=(P,), user_id="old-user")
    for mode in SearchMode:
        hits = storage.search_candidates("o1", query(storage, "bees roof", f, mode=mode, limit=5))
        assert [h.learning.id for h in hits] == [old.id], mode


def test_list_and_count_agree_with_the_reference_filter(storage: Storage) -> None:
    rng = random.Random(7)
    statuses = list(LearningStatus)
    rows = []
    for i in range(120):
        kind = rng.choice([P, U, A])
        rows.append(
            Learning(
                org_id="o1",
                kind=kind,
                content=f"learning {i} about {rng.choice(['cats', 'dogs', 'tax', 'deploys'])}",
                user_id=None if kind is A else rng.choice(["u1", "u2", "u3"]),
                agent_version=rng.choice(["v1", "v2"]),
                playbook_name=rng.choice(["default", "other"]),
                status=rng.choice(statuses),
                approval=rng.choice(list(Approval)) if kind is A else None,
                source=rng.choice([None, "Chat", "email"]),
                tags=rng.sample(["a", "b", "c"], rng.randint(0, 2)),
                created_at=1_000 + i * 10,
                updated_at=1_000 + i * 10,
                expires_at=rng.choice([1_500, 4_102_444_800]),
            )
        )
    saved = storage.save_learnings(rows, Audit())
    filters = [
        LearningFilter(),
        LearningFilter(kinds=(P, U), user_id="u2"),
        LearningFilter(kinds=(A,), approvals=(Approval.APPROVED,), agent_version="v1"),
        LearningFilter(statuses=(LearningStatus.CURRENT, LearningStatus.PENDING), playbook_name="other"),
        LearningFilter(source="chat"),
        LearningFilter(tags=("a", "c")),
        LearningFilter(tags=()),
        LearningFilter(created_after=1_300, created_before=1_800),
        LearningFilter(active_at=1_600),
        LearningFilter(expired_at=1_600, kinds=(P,)),
        LearningFilter(ids=tuple(r.id for r in saved[:10]), kinds=(U,)),
        LearningFilter(profile_ids=tuple(r.profile_id for r in saved if r.profile_id)[:5]),
        LearningFilter(approvals=(Approval.REJECTED,)),
    ]
    for f in filters:
        expected = sorted(r.id for r in saved if matches(f, r))
        got = sorted(r.id for r in storage.list_learnings("o1", f, limit=1000))
        assert got == expected, f
        assert storage.count_learnings("o1", f) == len(expected), f
        hits = storage.search_candidates(
            "o1", query(storage, "learning about cats dogs tax deploys", f, limit=1000)
        )
        assert {h.learning.id for h in hits} <= set(expected), f


def test_listing_orders_newest_first_and_pages(storage: Storage) -> None:
    rows = storage.save_learnings(
        [profile("o1", "u1", f"fact {i}", created_at=100 + i, updated_at=100 + i) for i in range(5)],
        Audit(),
    )
    page1 = storage.list_learnings("o1", LearningFilter(), limit=2)
    page2 = storage.list_learnings("o1", LearningFilter(), limit=2, offset=2)
    assert [r.id for r in page1 + page2] == [r.id for r in reversed(rows)][:4]
    oldest = storage.list_learnings("o1", LearningFilter(), limit=1, newest_first=False)
    assert oldest[0].id == rows[0].id


def test_status_swap_is_atomic_inside_a_transaction(storage: Storage) -> None:
    rows = storage.save_learnings(
        [
            profile("o1", "u1", "current fact"),
            profile("o1", "u1", "pending fact", status=LearningStatus.PENDING),
        ],
        Audit(),
    )
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.update_learnings(
            "o1",
            LearningFilter(statuses=(LearningStatus.CURRENT,)),
            {"status": LearningStatus.ARCHIVED},
            Audit(),
        )
        tx.update_learnings(
            "o1",
            LearningFilter(statuses=(LearningStatus.PENDING,)),
            {"status": LearningStatus.CURRENT},
            Audit(),
        )
        raise RuntimeError("crash between steps")
    statuses = {r.content: r.status for r in storage.get_learnings("o1", LearningFilter())}
    assert statuses == {
        "current fact": LearningStatus.CURRENT,
        "pending fact": LearningStatus.PENDING,
    }
    hits = storage.search_candidates(
        "o1", query(storage, "fact", LearningFilter(statuses=(LearningStatus.CURRENT,)))
    )
    assert [h.learning.id for h in hits] == [rows[0].id]


def test_exposures_are_per_session(storage: Storage) -> None:
    storage.add_exposures("o1", "s1", [("profile", "p1"), ("agent_playbook", "3")])
    storage.add_exposures("o1", "s1", [("profile", "p1")])
    assert storage.list_exposures("o1", "s1") == {("profile", "p1"), ("agent_playbook", "3")}
    assert storage.list_exposures("o1", "s2") == set()
    assert storage.list_exposures("o2", "s1") == set()
