"""``memory://`` is the SQLite engine on a throwaway file: it works like SQLite, and leaves nothing."""

from __future__ import annotations

from pathlib import Path

from tests.storage.test_contract_log import publish

from reflexio.embed import Embedder
from reflexio.filters import CandidateQuery, InteractionFilter, LearningFilter
from reflexio.records import Audit, Job, Learning, LearningKind
from reflexio.storage import Storage, open_storage
from reflexio.storage.sql_storage import SqlStorage
from reflexio.storage.sqlite import SqliteConnector


def test_memory_is_sqlite_on_a_file_that_close_removes(embedder: Embedder) -> None:
    store = open_storage("memory://", embedder)
    assert isinstance(store, SqlStorage) and isinstance(store.db, SqliteConnector)
    assert store.backend == "memory"
    folder = Path(store.db.path).parent
    assert store.db.path.exists()
    store.ping()
    store.close()
    assert not folder.exists()


def test_memory_serves_the_log_learnings_search_and_jobs(memory_storage: Storage) -> None:
    store = memory_storage
    turns = publish(store, "o1", "r1", texts=("my parcel is lost", "sorry to hear that"))
    assert store.search_interactions("o1", InteractionFilter(), "parcel", limit=5)[0][0].id == turns[0].id
    with store.transaction() as tx:
        saved = tx.save_learnings(
            [Learning(org_id="o1", kind=LearningKind.PROFILE, user_id="u1", content="Ships to Lisbon")],
            Audit(actor="test"),
        )
        tx.enqueue_jobs([Job(org_id="o1", task="extract", key="u1")])
    where = LearningFilter(kinds=(LearningKind.PROFILE,), user_id="u1")
    query = CandidateQuery(filters=(where,), text="lisbon shipping")
    assert [c.learning.id for c in store.search_candidates("o1", query)] == [saved[0].id]
    (claimed,) = store.claim_jobs("w1", limit=5, lease_seconds=30)
    assert store.finish_job(claimed.id, "w1")


def test_two_memory_stores_share_nothing(embedder: Embedder) -> None:
    first, second = open_storage("memory://", embedder), open_storage("memory://", embedder)
    try:
        publish(first, "o1", "r1")
        assert second.get_request("o1", "r1") is None and first.get_request("o1", "r1") is not None
    finally:
        first.close()
        second.close()
