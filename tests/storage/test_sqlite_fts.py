"""SQLite indexes interactions for full-text search in batches, after the publish commits.

Migration 004 moved indexing out of the publish transaction; these tests hold the two things
that could go wrong: a turn that is never indexed, and an external-content FTS5 index that no
longer matches its table (deleting a row that was never indexed corrupts it).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from tests.storage.test_contract_log import publish

from reflexio.embed import Embedder
from reflexio.filters import InteractionFilter, RequestFilter
from reflexio.storage.sql_storage import SqlStorage
from reflexio.storage.sqlite import SqliteConnector


def _indexed_upto(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT indexed_upto FROM fts_progress WHERE name = 'interactions'").fetchone()
    return int(row[0])


def _integrity_check(path: Path) -> None:
    """FTS5 raises SQLITE_CORRUPT_VTAB here when the index disagrees with the table."""
    with sqlite3.connect(path, timeout=30) as conn:
        conn.execute("INSERT INTO interactions_fts (interactions_fts) VALUES ('integrity-check')")


def test_publishing_does_not_index_and_housekeeping_does(tmp_path: Path, embedder: Embedder) -> None:
    path = tmp_path / "r.db"
    store = SqlStorage(SqliteConnector(path), embedder)
    try:
        stored = publish(store, "o1", "r1", texts=("parcel lost", "sorry"))
        assert _indexed_upto(path) < stored[-1].id, "the publish transaction indexed its turns"
        deadline = time.monotonic() + 10
        while _indexed_upto(path) < stored[-1].id:
            assert time.monotonic() < deadline, "the housekeeping thread never indexed the turns"
            time.sleep(0.05)
        _integrity_check(path)
    finally:
        store.close()


def test_deleting_turns_that_were_never_indexed_keeps_the_index_sound(
    tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "r.db"
    db = SqliteConnector(path)
    store = SqlStorage(db, embedder)
    try:
        db.index_new_interactions()
        publish(store, "o1", "r1", texts=("parcel lost",))
        publish(store, "o1", "r2", texts=("parcel found",))
        store.delete_log("o1", requests=RequestFilter(request_ids=("r1",)))  # r1 was never indexed
        db.index_new_interactions()
        _integrity_check(path)
        store.delete_log("o1", requests=RequestFilter(request_ids=("r2",)))  # r2 was
        _integrity_check(path)
        assert store.search_interactions("o1", InteractionFilter(), "parcel", limit=5) == []
    finally:
        store.close()
