"""SQLite indexes interactions for full-text search in batches, after the publish commits.

Migration 004 moved indexing out of the publish transaction; these tests hold the two things
that could go wrong: a turn that is never indexed, and an external-content FTS5 index that no
longer matches its table (deleting a row that was never indexed corrupts it).
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.storage.test_contract_log import publish

from reflexio.embed import Embedder
from reflexio.filters import InteractionFilter, RequestFilter
from reflexio.storage.sqlite import SqliteStorage


def _indexed_upto(store: SqliteStorage) -> int:
    row = (
        store._conn().execute("SELECT indexed_upto FROM fts_progress WHERE name = 'interactions'").fetchone()
    )
    return int(row[0])


def _integrity_check(store: SqliteStorage) -> None:
    """FTS5 raises SQLITE_CORRUPT_VTAB here when the index disagrees with the table."""
    with store._write() as conn:
        conn.execute("INSERT INTO interactions_fts (interactions_fts) VALUES ('integrity-check')")


def test_publishing_does_not_index_and_housekeeping_does(tmp_path: Path, embedder: Embedder) -> None:
    store = SqliteStorage(tmp_path / "r.db", embedder)
    try:
        stored = publish(store, "o1", "r1", texts=("parcel lost", "sorry"))
        assert _indexed_upto(store) < stored[-1].id, "the publish transaction indexed its turns"
        deadline = time.monotonic() + 10
        while _indexed_upto(store) < stored[-1].id:
            assert time.monotonic() < deadline, "the housekeeping thread never indexed the turns"
            time.sleep(0.05)
        _integrity_check(store)
    finally:
        store.close()


def test_deleting_turns_that_were_never_indexed_keeps_the_index_sound(
    tmp_path: Path, embedder: Embedder
) -> None:
    store = SqliteStorage(tmp_path / "r.db", embedder)
    try:
        store.index_new_interactions()
        publish(store, "o1", "r1", texts=("parcel lost",))
        publish(store, "o1", "r2", texts=("parcel found",))
        store.delete_log("o1", requests=RequestFilter(request_ids=("r1",)))  # r1 was never indexed
        store.index_new_interactions()
        _integrity_check(store)
        store.delete_log("o1", requests=RequestFilter(request_ids=("r2",)))  # r2 was
        _integrity_check(store)
        assert store.search_interactions("o1", InteractionFilter(), "parcel", limit=5) == []
    finally:
        store.close()
