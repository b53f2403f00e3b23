"""What a search costs in round trips on PostgreSQL (issue 18).

Every statement is a round trip to the server, and on a busy machine a round trip costs more
than the search itself: a unified search made 13 (the org's sequence and its result rows per
candidate search, an empty query checking each pooled connection before its loan, the org's
plan, and BEGIN and COMMIT around the search counter). Counted here at the driver: each
``Cursor.execute`` is one statement, each ``Transaction`` adds BEGIN and COMMIT.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from tests.conftest import POSTGRES_URL, postgres_schema_url

from reflexio.embed import Embedder
from reflexio.filters import CandidateQuery, LearningFilter, SearchMode
from reflexio.records import Audit, Learning, LearningKind, LearningStatus
from reflexio.storage import postgres
from reflexio.storage.postgres import PostgresConnector
from reflexio.storage.sql_storage import SqlStorage

pytestmark = pytest.mark.postgres

A = LearningKind.AGENT_PLAYBOOK


@pytest.fixture
def pair(embedder: Embedder) -> Iterator[tuple[SqlStorage, SqlStorage]]:
    """Two storages on one schema: two API processes, each with its own in-process index."""
    if not POSTGRES_URL:
        pytest.skip("REFLEXIO_TEST_POSTGRES_URL is not set")
    url = postgres_schema_url()
    first, second = (
        SqlStorage(PostgresConnector(url, dim=embedder.dim, search_index_bytes=64 << 20), embedder)
        for _ in range(2)
    )
    yield first, second
    first.close()
    second.close()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements sent from now on (BEGIN and COMMIT of a transaction as two)."""
    statements: list[str] = []
    execute, enter = psycopg.Cursor.execute, psycopg.Transaction.__enter__

    def counted(cur: psycopg.Cursor[object], query: object, *args: object, **kwargs: object) -> object:
        statements.append(" ".join(str(query).split())[:60])
        return execute(cur, query, *args, **kwargs)  # type: ignore[arg-type]

    def begun(tx: psycopg.Transaction) -> psycopg.Transaction:
        statements.extend(["BEGIN", "COMMIT"])
        return enter(tx)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    monkeypatch.setattr(psycopg.Transaction, "__enter__", begun)
    return statements


def rules(n: int) -> list[Learning]:
    return [
        Learning(org_id="o", kind=A, agent_version="v1", content=f"refund the order, case {i}")
        for i in range(n)
    ]


def ask(s: SqlStorage, text: str) -> set[int]:
    query = CandidateQuery(
        filters=(LearningFilter(kinds=(A,), statuses=(LearningStatus.CURRENT,)),),
        text=text,
        vector=s.embedder.embed([text], kind="query")[0],
        embed_model=s.embedder.name,
        mode=SearchMode.HYBRID,
    )
    return {c.learning.id for c in s.search_candidates("o", query)}


def test_a_search_of_a_current_index_is_one_statement(
    pair: tuple[SqlStorage, SqlStorage], sent: list[str]
) -> None:
    writer, reader = pair
    saved = writer.save_learnings(rules(30), Audit())
    ask(reader, "refund order case 3")  # builds the reader's index
    sent.clear()
    assert saved[7].id in ask(reader, "refund order case 7")  # rows it has not fetched before
    assert len(sent) == 1, sent  # the org's sequence and the rows, together
    writer.delete_learnings("o", LearningFilter(ids=(saved[7].id,)), Audit())
    assert saved[7].id not in ask(reader, "refund order case 7")  # another process' delete, at once
    sent.clear()
    assert saved[8].id in ask(reader, "refund order case 8")
    assert len(sent) == 1, sent


def test_counting_a_search_against_the_quota_is_one_statement(
    pair: tuple[SqlStorage, SqlStorage], sent: list[str]
) -> None:
    store, _ = pair
    assert store.count_usage("o", "2026-12", "searches", 1, limit=2) == 1
    sent.clear()
    assert store.count_usage("o", "2026-12", "searches", 1, limit=2) == 2
    assert len(sent) == 1, sent  # no BEGIN and COMMIT around it
    assert store.count_usage("o", "2026-12", "searches", 1, limit=2) is None  # still refused past the limit


def test_only_a_connection_idle_for_a_while_is_checked_before_its_loan(
    pair: tuple[SqlStorage, SqlStorage], sent: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = pair
    store.ping()
    sent.clear()
    store.get_org_config("o")
    assert len(sent) == 1, sent  # used a moment ago: lent as is
    monkeypatch.setattr(postgres, "CHECK_IDLE_SECONDS", 0.0)
    sent.clear()
    store.get_org_config("o")
    assert sent == ["", sent[1]]  # idle (every connection, now): an empty query checks it first
