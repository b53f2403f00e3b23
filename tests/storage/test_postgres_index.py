"""PostgreSQL's in-process search index: its memory budget, and exactness across connectors.

Two connectors on one schema stand for two API processes (each has its own indexes); the
subprocess version of the same promise is ``tests/api/test_two_processes.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from tests.conftest import POSTGRES_URL, postgres_schema_url

from reflexio.embed import Embedder
from reflexio.filters import Candidate, CandidateQuery, LearningFilter, SearchMode
from reflexio.records import Audit, Learning, LearningKind, LearningStatus
from reflexio.storage import postgres_index
from reflexio.storage.postgres import PostgresConnector
from reflexio.storage.postgres_index import IndexBudget
from reflexio.storage.sql_storage import SqlStorage

pytestmark = pytest.mark.postgres

A = LearningKind.AGENT_PLAYBOOK
MB = 1 << 20


@pytest.fixture
def url() -> str:
    if not POSTGRES_URL:
        pytest.skip("REFLEXIO_TEST_POSTGRES_URL is not set")
    return postgres_schema_url()


def store(url: str, embedder: Embedder, budget: int = 64 * MB) -> SqlStorage:
    return SqlStorage(PostgresConnector(url, dim=embedder.dim, search_index_bytes=budget), embedder)


@pytest.fixture
def pair(url: str, embedder: Embedder) -> Iterator[tuple[SqlStorage, SqlStorage]]:
    first, second = store(url, embedder), store(url, embedder)
    yield first, second
    first.close()
    second.close()


def rules(org: str, n: int, words: str = "refund the order") -> list[Learning]:
    return [Learning(org_id=org, kind=A, agent_version="v1", content=f"{words}, case {i}") for i in range(n)]


def ask(s: SqlStorage, org: str, text: str, mode: SearchMode = SearchMode.HYBRID) -> list[Candidate]:
    vector = s.embedder.embed([text], kind="query")[0] if mode is not SearchMode.FTS else None
    query = CandidateQuery(
        filters=(LearningFilter(kinds=(A,), statuses=(LearningStatus.CURRENT,)),),
        text=text,
        vector=vector,
        embed_model=s.embedder.name,
        mode=mode,
    )
    return s.search_candidates(org, query)


def ids(found: list[Candidate]) -> set[int]:
    return {c.learning.id for c in found}


def connector(s: SqlStorage) -> PostgresConnector:
    db = s.db
    assert isinstance(db, PostgresConnector)
    return db


def test_a_write_through_one_connector_is_searched_by_the_other_at_once(
    pair: tuple[SqlStorage, SqlStorage],
) -> None:
    writer, reader = pair
    saved = writer.save_learnings(rules("o", 20), Audit())
    assert ids(ask(reader, "o", "refund order case 3")) >= {saved[3].id}
    assert connector(reader).indexes.orgs() == ["o"]  # answered from its index
    edited = saved[3].copy(content="Offer a spare battery for a swollen cell")
    writer.save_learnings([edited], Audit())
    assert saved[3].id not in ids(ask(reader, "o", "refund order case 3", SearchMode.FTS))
    assert saved[3].id in ids(ask(reader, "o", "swollen battery", SearchMode.FTS))
    writer.delete_learnings("o", LearningFilter(ids=(saved[3].id,)), Audit())
    for mode in SearchMode:
        assert saved[3].id not in ids(ask(reader, "o", "swollen battery", mode))
    assert saved[4].id in ids(ask(reader, "o", "refund order case 4", SearchMode.FTS))


def test_scores_match_the_sqlite_index_exactly(url: str, embedder: Embedder, tmp_path: object) -> None:
    from reflexio.storage import open_storage

    pg = store(url, embedder)
    lite = open_storage(f"sqlite:///{tmp_path}/r.db", embedder)
    try:
        for s in (pg, lite):
            s.save_learnings(rules("o", 30) + rules("o", 5, "ship the parcel today"), Audit())
        text = "refund a parcel order"
        scores = [
            sorted(
                (c.learning.content, c.fts_score, c.fts_norm, c.fts_best, c.fts_floor, c.vector_score)
                for c in ask(s, "o", text)  # type: ignore[arg-type]
            )
            for s in (pg, lite)
        ]
        assert scores[0] == scores[1] and scores[0]
    finally:
        pg.close()
        lite.close()


def test_an_org_past_the_budget_is_searched_in_sql_and_said_so(
    url: str, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    budget = IndexBudget(0, embedder.dim).cost(10) + 1  # room for ten rows
    s = store(url, embedder, budget)
    try:
        s.save_learnings(rules("small", 5) + rules("big", 40), Audit())
        with caplog.at_level(logging.WARNING, logger="reflexio.storage.postgres_index"):
            big = ask(s, "big", "refund order case 7")
            ask(s, "big", "refund order case 8")
        assert connector(s).indexes.orgs() == []  # "big" does not fit
        assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
        assert "searching org big in SQL" in caplog.records[0].message
        assert len(ask(s, "small", "refund order case 1")) == 5
        assert connector(s).indexes.orgs() == ["small"]
        assert all(c.fts_score is not None and c.fts_score <= 0.1 for c in big)  # ts_rank's scale
    finally:
        s.close()


def test_a_budget_of_zero_searches_everything_in_sql(url: str, embedder: Embedder) -> None:
    s = store(url, embedder, 0)
    try:
        (saved,) = s.save_learnings(rules("o", 1), Audit())
        assert ids(ask(s, "o", "refund")) == {saved.id}
        assert connector(s).indexes.orgs() == []
    finally:
        s.close()


def test_an_org_that_grows_past_the_budget_goes_back_to_sql(
    url: str, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = store(url, embedder, IndexBudget(0, embedder.dim).cost(10) + 1)
    try:
        s.save_learnings(rules("o", 8), Audit())
        ask(s, "o", "refund")
        assert connector(s).indexes.orgs() == ["o"]
        s.save_learnings(rules("o", 8), Audit())
        assert len(ask(s, "o", "refund")) == 16  # within RECOUNT_SECONDS: still the index, caught up
        monkeypatch.setattr(postgres_index, "RECOUNT_SECONDS", 0.0)
        assert len(ask(s, "o", "refund")) == 16  # re-counted: dropped, answered in SQL
        assert connector(s).indexes.orgs() == []
        s.delete_learnings("o", LearningFilter(), Audit())
        assert ask(s, "o", "refund") == []
        assert connector(s).indexes.orgs() == ["o"]  # fits again
    finally:
        s.close()


def test_warm_builds_every_org_that_fits(url: str, embedder: Embedder) -> None:
    first = store(url, embedder)
    first.save_learnings(rules("a", 3) + rules("b", 3), Audit())
    first.close()
    second = store(url, embedder)
    try:
        assert connector(second).indexes.orgs() == []
        second.warm_search()
        assert connector(second).indexes.orgs() == ["a", "b"]
    finally:
        second.close()


def test_a_search_inside_a_transaction_sees_its_own_writes(url: str, embedder: Embedder) -> None:
    s = store(url, embedder)
    try:
        s.save_learnings(rules("o", 2), Audit())
        assert len(ask(s, "o", "refund")) == 2
        db = connector(s)
        with db.transaction():
            s.save_learnings(rules("o", 1, "refund within the hour"), Audit())
            assert len(ask(s, "o", "refund")) == 3  # in SQL, on the transaction's connection
        assert len(ask(s, "o", "refund")) == 3  # committed: the index caught up
    finally:
        s.close()
