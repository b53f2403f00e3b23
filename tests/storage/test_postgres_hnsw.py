"""PostgreSQL's vector index: one HNSW graph per kind, walked for broad scopes of that kind.

The contract suite's scopes are too small for the graph to pay, so these tests build it on
purpose (``hnsw_min_rows=0``) over a scope of a few thousand rows.
"""

from __future__ import annotations

import psycopg
import pytest
from tests.conftest import POSTGRES_URL, postgres_schema_url

from reflexio.embed import Embedder
from reflexio.filters import CandidateQuery, LearningFilter, SearchMode
from reflexio.records import Audit, Learning, LearningKind
from reflexio.storage.postgres import POSTGRES, PostgresConnector
from reflexio.storage.postgres_search import SearchStatement, hnsw_index
from reflexio.storage.sql_storage import SqlStorage

pytestmark = pytest.mark.postgres

A, P = LearningKind.AGENT_PLAYBOOK, LearningKind.PROFILE
TOPICS = ["refunds", "shipping", "passwords", "invoices", "laptops", "flights", "hotels", "taxes"]


@pytest.fixture
def url() -> str:
    if not POSTGRES_URL:
        pytest.skip("REFLEXIO_TEST_POSTGRES_URL is not set")
    return postgres_schema_url()


def _rows() -> list[Learning]:
    rules = [
        Learning(
            org_id="o",
            kind=A,
            agent_version=f"v{i % 2}",
            trigger=f"questions about {TOPICS[i % len(TOPICS)]}",
            content=f"Rule {i}: answer {TOPICS[(i * 7) % len(TOPICS)]} questions with care, case {i}",
        )
        for i in range(5000)
    ]
    profiles = [
        Learning(org_id="o", kind=P, user_id=f"u{i % 50}", content=f"Travels for {TOPICS[i % 8]} {i}")
        for i in range(500)
    ]
    return rules + profiles


def test_each_kind_gets_its_own_graph_replacing_the_shared_one(url: str, embedder: Embedder) -> None:
    store = SqlStorage(PostgresConnector(url, dim=embedder.dim, hnsw_min_rows=None), embedder)
    store.save_learnings(_rows(), Audit())
    store.close()
    dim = embedder.dim
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE learnings")  # what autovacuum does after a load; the planner sizes scopes by it
        conn.execute(  # the shared graph of earlier versions
            f"CREATE INDEX learnings_hnsw_{dim} ON learnings "
            f"USING hnsw ((embedding::vector({dim})) vector_ip_ops) WHERE embed_dim = {dim}"
        )
    db = PostgresConnector(url, dim=embedder.dim, hnsw_min_rows=0)
    store = SqlStorage(db, embedder)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            names = {
                r[0]
                for r in conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                    "AND indexname LIKE 'learnings_hnsw%%'"
                )
            }
        assert names == {hnsw_index(dim, kind) for kind in LearningKind}

        where = LearningFilter(kinds=(A,), agent_version="v1")
        text = "how to answer questions about refunds"
        query = CandidateQuery(
            filters=(where,),
            text=text,
            vector=embedder.embed([text], kind="query")[0],
            embed_model=embedder.name,
            limit=20,
            mode=SearchMode.VECTOR,
        )
        found = store.search_candidates("o", query)
        # The walk found a full answer within the scope ...
        assert len(found) == 20
        assert all(c.learning.kind is A and c.learning.agent_version == "v1" for c in found)
        # ... because the storage chose the graph and the planner walks the agent playbooks' own.
        statement = SearchStatement.of("o", where, query, POSTGRES)
        with db.connection() as conn:
            assert db.search.hnsw_pays(conn, statement)
            sql = "EXPLAIN " + statement.statement(hnsw=True)
            plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(sql, statement.params, prepare=False))
        assert f"Index Scan using {hnsw_index(dim, A)}" in plan
        # The approximate walk agrees with an exact ranking of the scope on the best rows.
        exact = sorted(
            store.get_learnings("o", where),
            key=lambda row: -float(row.embedding @ query.vector),  # type: ignore[operator]
        )[:10]
        best = {c.learning.id for c in sorted(found, key=lambda c: -(c.vector_score or 0.0))[:10]}
        assert len(best & {row.id for row in exact}) >= 8
    finally:
        store.close()
