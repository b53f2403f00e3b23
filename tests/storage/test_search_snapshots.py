"""SQLite's search indexes across restarts: a reopened store starts each org's index from its
snapshot (``storage.index_file``) and catches up on the change log, and a snapshot that is
damaged, of another database or of another history is passed over for a rebuild.

Each test compares the reopened store's answers with those of a store that rebuilt its index
from rows, so a snapshot that was loaded wrongly fails on the answers, not only on the logs.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from reflexio.embed import Embedder
from reflexio.filters import CandidateQuery, LearningFilter
from reflexio.records import Audit, Learning, LearningKind
from reflexio.storage import Storage, index_file, open_storage

ORG = "o1"
QUERIES = ("coffee in the morning", "flying scares them", "reply in Portuguese", "new laptop")
LOADED = "from its snapshot"
T = TypeVar("T")


def url(folder: Path) -> str:
    return f"sqlite:///{folder}/reflexio.db"


def facts(user: str, *contents: str) -> list[Learning]:
    return [Learning(org_id=ORG, kind=LearningKind.PROFILE, user_id=user, content=c) for c in contents]


FIRST = facts("u1", "Drinks black coffee every morning", "Is terrified of flying", "Lives in Porto")
SECOND = facts("u2", "Prefers replies in Portuguese", "Bought a new laptop last week")


def query(text: str, embedder: Embedder, limit: int) -> CandidateQuery:
    vector = embedder.embed([text], kind="query")[0]
    return CandidateQuery(
        filters=(LearningFilter(),), text=text, vector=vector, embed_model=embedder.name, limit=limit
    )


def answers(store: Storage, embedder: Embedder) -> list[list[tuple[int, str]]]:
    out = []
    for text in QUERIES:
        found = store.search_candidates(ORG, query(text, embedder, 10))
        out.append(sorted((c.learning.id, c.learning.content) for c in found))
    return out


def scored(store: Storage, embedder: Embedder) -> list[list[tuple[int, str, float, float]]]:
    """Every row each query matches, with both arms' scores (a limit above the row count, so
    that rows tied on a score cannot make two equal indexes return different ones)."""
    out = []
    for text in QUERIES:
        found = store.search_candidates(ORG, query(text, embedder, 10_000))
        out.append(
            sorted(
                (
                    c.learning.id,
                    c.learning.content,
                    round(c.fts_score or 0.0, 6),
                    round(c.vector_score or 0.0, 6),
                )
                for c in found
            )
        )
    return out


def rebuilt_answers(folder: Path, embedder: Embedder, ask: Callable[[Storage, Embedder], T] = answers) -> T:
    """What a store without the snapshots answers (they are moved aside, then back)."""
    aside = folder / "aside"
    shutil.move(folder / "reflexio.db.search", aside)
    try:
        store = open_storage(url(folder), embedder)
        try:
            return ask(store, embedder)
        finally:
            store.close()
    finally:
        shutil.rmtree(folder / "reflexio.db.search", ignore_errors=True)
        shutil.move(aside, folder / "reflexio.db.search")


def snapshot_file(folder: Path) -> Path:
    return index_file.path_for(folder / "reflexio.db.search", ORG)


def searched_and_closed(folder: Path, embedder: Embedder, *batches: list[Learning]) -> None:
    store = open_storage(url(folder), embedder)
    for batch in batches:
        store.save_learnings(batch, Audit(actor="test"))
    answers(store, embedder)  # builds the index, so closing writes its snapshot
    store.close()


def test_a_reopened_store_loads_its_snapshot_and_catches_up_on_later_writes(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    searched_and_closed(tmp_path, embedder, FIRST)
    assert snapshot_file(tmp_path).exists()
    writer = open_storage(url(tmp_path), embedder)  # another process writes, never searches
    writer.save_learnings(SECOND, Audit(actor="test"))
    doomed = writer.get_learnings(ORG, LearningFilter(user_id="u1"))[2]
    writer.delete_learnings(ORG, LearningFilter(ids=(doomed.id,)), Audit(actor="test"))
    writer.close()
    expected = rebuilt_answers(tmp_path, embedder)
    assert "Lives in Porto" not in str(expected) and "Portuguese" in str(expected)

    caplog.set_level(logging.INFO, logger="reflexio.storage.sqlite_search")
    store = open_storage(url(tmp_path), embedder)
    try:
        store.warm_search()  # loads before the first search, as a server does
        assert LOADED in caplog.text
        caplog.clear()
        assert answers(store, embedder) == expected
        assert LOADED not in caplog.text  # the first search found the index ready
    finally:
        store.close()


def test_a_snapshot_is_written_in_the_background_once_an_index_is_built(
    tmp_path: Path, embedder: Embedder
) -> None:
    store = open_storage(url(tmp_path), embedder)
    try:
        store.save_learnings(FIRST, Audit(actor="test"))
        answers(store, embedder)
        deadline = time.monotonic() + 30
        while not snapshot_file(tmp_path).exists():  # not waiting for close
            assert time.monotonic() < deadline, "no snapshot was written after the build"
            time.sleep(0.02)
    finally:
        store.close()


def test_a_damaged_snapshot_is_passed_over_and_the_index_rebuilt(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    searched_and_closed(tmp_path, embedder, FIRST, SECOND)
    expected = rebuilt_answers(tmp_path, embedder)
    path = snapshot_file(tmp_path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    caplog.set_level(logging.INFO, logger="reflexio.storage")
    store = open_storage(url(tmp_path), embedder)
    try:
        assert answers(store, embedder) == expected
        assert "unreadable search snapshot" in caplog.text and LOADED not in caplog.text
    finally:
        store.close()
    assert index_file.read(path, org_id=ORG, database=_database_name(tmp_path, embedder)) is not None


def test_a_snapshot_of_another_database_at_the_same_path_is_not_used(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    searched_and_closed(tmp_path, embedder, FIRST)
    for name in ("reflexio.db", "reflexio.db-wal", "reflexio.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    caplog.set_level(logging.INFO, logger="reflexio.storage")
    store = open_storage(url(tmp_path), embedder)  # a new, empty database
    try:
        store.save_learnings(SECOND, Audit(actor="test"))
        assert "Drinks black coffee" not in str(answers(store, embedder))
        assert "of another format, org or database" in caplog.text and LOADED not in caplog.text
    finally:
        store.close()


def test_a_restored_backup_that_took_other_writes_does_not_use_the_newer_snapshot(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_storage(url(tmp_path), embedder)
    store.save_learnings(FIRST, Audit(actor="test"))
    store.close()
    backup = tmp_path / "backup"
    backup.mkdir()
    shutil.copy(tmp_path / "reflexio.db", backup / "reflexio.db")
    searched_and_closed(tmp_path, embedder, SECOND)  # the snapshot: FIRST, then SECOND
    shutil.copy(backup / "reflexio.db", tmp_path / "reflexio.db")  # restored: FIRST only
    other = facts("u3", "Keeps bees on the roof", "Plays the cello")  # at SECOND's number
    caplog.set_level(logging.INFO, logger="reflexio.storage")
    store = open_storage(url(tmp_path), embedder)
    try:
        store.save_learnings(other, Audit(actor="test"))
        found = str(answers(store, embedder))
        assert "Portuguese" not in found and "bees" in found
        assert "another history" in caplog.text and LOADED not in caplog.text
    finally:
        store.close()


def _database_name(folder: Path, embedder: Embedder) -> str:
    """The name the database gives its snapshots (its first snapshot's, read back)."""
    store = open_storage(url(folder), embedder)
    try:
        return str(store.db.tuples("database_name", {})[0][0])  # type: ignore[attr-defined]
    finally:
        store.close()


def test_an_org_without_learnings_reopens_from_its_snapshot(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    searched_and_closed(tmp_path, embedder)  # an empty index: no rows, no terms
    assert snapshot_file(tmp_path).exists()
    caplog.set_level(logging.INFO, logger="reflexio.storage")
    store = open_storage(url(tmp_path), embedder)
    try:
        assert answers(store, embedder) == [[] for _ in QUERIES]
        assert LOADED in caplog.text and "unreadable" not in caplog.text
    finally:
        store.close()


def test_snapshots_written_while_the_index_changes_load_back_as_what_they_saw(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every catch-up queues a snapshot here, so they are frozen and written while another
    thread goes on adding, rewriting and deleting rows; each must load, and the last one must
    answer as a rebuild does."""
    monkeypatch.setattr(index_file, "REFRESH_SECONDS", 0.0)
    monkeypatch.setattr(index_file, "REFRESH_CHANGES", 1)
    store = open_storage(url(tmp_path), embedder)
    database = str(store.db.tuples("database_name", {})[0][0])  # type: ignore[attr-defined]
    stop = threading.Event()

    def write() -> None:
        round_ = 0
        while not stop.is_set() and round_ < 60:
            store.save_learnings(
                facts(f"u{round_ % 4}", f"Drinks coffee number {round_}", f"Flew to city {round_}"),
                Audit(actor="test"),
            )
            if round_ % 3 == 2:
                oldest = store.get_learnings(ORG, LearningFilter(user_id=f"u{round_ % 4}"))[0]
                store.delete_learnings(ORG, LearningFilter(ids=(oldest.id,)), Audit(actor="test"))
            round_ += 1

    writer = threading.Thread(target=write)
    writer.start()
    loads = 0
    try:
        while writer.is_alive():
            answers(store, embedder)  # catches up, and queues a snapshot of what it caught up to
            if snapshot_file(tmp_path).exists():
                assert index_file.read(snapshot_file(tmp_path), org_id=ORG, database=database) is not None
                loads += 1
    finally:
        stop.set()
        writer.join()
        answers(store, embedder)
        store.close()
    assert loads > 0
    expected = rebuilt_answers(tmp_path, embedder, scored)
    caplog.set_level(logging.INFO, logger="reflexio.storage")
    store = open_storage(url(tmp_path), embedder)
    try:
        store.warm_search()
        assert LOADED in caplog.text and "unreadable" not in caplog.text
        assert scored(store, embedder) == expected
    finally:
        store.close()
