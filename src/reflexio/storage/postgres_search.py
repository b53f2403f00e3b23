"""PostgreSQL candidate search in SQL: the statement for one filter, and when a vector walk pays.

Searches are answered from the in-process index (``storage.postgres_index``) where the org
fits its memory budget; this is the path for orgs that do not, for searches inside a
transaction, and for ``REFLEXIO_SEARCH_INDEX_MB=0``.

``PostgresSearch.candidates`` runs one ``SearchStatement`` per filter of a ``CandidateQuery``:
a full-text arm (``tsvector`` matched by an OR ``tsquery``, ranked by ``ts_rank``) and a vector
arm (pgvector inner product, exact or through the kind's HNSW index when the scope is big
enough for the graph walk to pay), joined so every candidate carries both arms' scores and
ranks. The SQL pieces live in ``sql/postgres/engine.sql``.

Why it is built this way:

* **Stateless.** In SQL any process can serve any org without warming a cache; each arm
  ranks its own top rows of the *filtered* scope, and the outer query scores every row of the
  union on both arms, so fusion never has to guess a missing score.
* **Scores on the same footing as SQLite's.** ``fts_score`` is ``ts_rank`` of an OR query: the
  mean over the query's distinct lexemes of a term-frequency saturation that tops out at the
  lexeme weight (0.1 for our unweighted text). ``fts_norm`` is that rank over 0.1, the share
  of what the query could reach, as the BM25 index divides by the query's BM25 ceiling (there
  is no IDF: PostgreSQL keeps no corpus statistics). ``vector_score`` is the inner product,
  the cosine for the unit vectors every ``Embedder`` returns, and 0 rather than NaN for the
  zero vector a text of only stop words embeds to.
* **One HNSW graph per kind and dimension, walked only when it pays.** Every search filters
  on one kind; in a graph shared by all kinds a filtered walk for one agent version's rules
  passed mostly other scopes' rows, gave up short and fell back to an exact scan. The
  planner's cost model underrates filtered walks, so the storage decides from the planner's
  row estimate of the scope (``bench/results/search.md`` measures search on these graphs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from psycopg.rows import DictRow

from reflexio import ranking
from reflexio.errors import ValidationError
from reflexio.filters import Candidate, CandidateQuery, LearningFilter, SearchMode
from reflexio.records import LearningKind, Vector
from reflexio.storage import rows
from reflexio.storage.postgres_types import Conn
from reflexio.storage.queries import Dialect, queries, where_learnings

__all__ = [
    "TS_RANK_CEILING",
    "PostgresSearch",
    "SearchStatement",
    "hnsw_index",
    "tsquery",
    "vector_dim",
]

_Q = queries("postgres")

#: ``ts_rank``'s ceiling for lexemes without a weight label (weight D = 0.1).
TS_RANK_CEILING: Final = 0.1
#: pgvector's limit: a ``vector`` has at most 16000 dimensions.
MAX_DIM: Final = 16_000
#: The vector arm walks its kind's HNSW graph only for scopes the planner expects to hold at
#: least this many rows and this share of the graph: on small scopes an exact scan is faster,
#: and a walk through a graph where few nodes pass the filter can give up short.
_HNSW_MIN_SCOPE: Final = 2_000
_HNSW_MIN_SHARE: Final = 0.01


def one_row(conn: Conn, query: str, params: dict[str, Any], *, prepare: bool | None = None) -> DictRow:
    """The single row a query must return."""
    row = conn.execute(query, params, prepare=prepare).fetchone()
    assert row is not None
    return row


def vector_dim(value: int) -> int:
    """A vector dimension that is safe to write into SQL as a literal."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValidationError(f"vector dimension must be an int, got {value!r}")
    if not 1 <= int(value) <= MAX_DIM:
        raise ValidationError(f"vector dimension {value} is outside 1..{MAX_DIM}")
    return int(value)


def hnsw_index(dim: int, kind: LearningKind) -> str:
    """The name of the HNSW index over one kind's vectors of one dimension."""
    return f"learnings_hnsw_{vector_dim(dim)}_{kind.value}"


def tsquery(text: str) -> str | None:
    """An OR query over the text's content words, each quoted as one operand; PostgreSQL
    stems them with the english config (plainto_tsquery would AND them)."""
    words = ranking.raw_words(text)
    if not words:
        return None
    quoted = ("'" + w.replace("\\", "\\\\").replace("'", "''") + "'" for w in words)
    return " | ".join(quoted)


def query_vector(query: CandidateQuery) -> Vector | None:
    """The query vector when the vector arm runs (a vector, a model name, not FTS mode)."""
    if query.mode is SearchMode.FTS or query.vector is None or not query.embed_model:
        return None
    vector = np.asarray(query.vector, dtype=np.float32)
    if vector.ndim != 1:
        raise ValidationError("the query vector must be one-dimensional")
    vector_dim(len(vector))
    return vector


class PostgresSearch:
    """Candidate search over one database, knowing which (dimension, kind) graphs exist."""

    def __init__(self, dialect: Dialect, hnsw: frozenset[tuple[int, LearningKind]]) -> None:
        self.dialect = dialect
        self.hnsw = hnsw

    def candidates(self, conn: Conn, org_id: str, query: CandidateQuery) -> list[Candidate]:
        """Each filter's candidates, in filter order."""
        out: list[Candidate] = []
        for i, where in enumerate(query.filters):
            search = SearchStatement.of(org_id, where, query, self.dialect)
            out.extend(_candidates(self._rows(conn, search), i, search.limit))
        return out

    def _rows(self, conn: Conn, search: SearchStatement) -> list[DictRow]:
        hnsw = search.vector is not None and self.hnsw_pays(conn, search)
        found = search.run(conn, hnsw=hnsw)
        if hnsw and sum(1 for r in found if r["vector_rank"]) < search.limit:
            # The filtered graph walk gave up before it found enough rows of the scope.
            found = search.run(conn, hnsw=False)
        return found

    def hnsw_pays(self, conn: Conn, search: SearchStatement) -> bool:
        """Whether the scope is big enough, absolutely and as a share of its kind's graph, for
        a filtered HNSW walk to beat an exact scan (from the planner's estimates)."""
        assert search.vector is not None
        dim = vector_dim(len(search.vector))
        if search.kind is None or (dim, search.kind) not in self.hnsw:
            return False
        sql = _Q.render("scope_estimate", {"where": search.where_sql, "dim": str(dim)})
        plan = one_row(conn, sql, search.params, prepare=False)["QUERY PLAN"]
        scope = float(plan[0]["Plan"]["Plan Rows"])
        graph = float(one_row(conn, _Q["hnsw_rows"], {"name": hnsw_index(dim, search.kind)})["n"])
        return scope >= max(_HNSW_MIN_SCOPE, _HNSW_MIN_SHARE * graph)


@dataclass(frozen=True, slots=True)
class SearchStatement:
    """One filter of a ``CandidateQuery``, compiled once for its statement(s)."""

    where_sql: str
    #: The named parameters of every statement of this filter (the WHERE fragment's and ours).
    params: dict[str, Any]
    tsquery: str | None
    vector: Vector | None
    limit: int
    #: The one kind the filter selects (None for several or any): each kind has its own graph.
    kind: LearningKind | None = None

    @classmethod
    def of(cls, org_id: str, where: LearningFilter, query: CandidateQuery, d: Dialect) -> SearchStatement:
        where_sql, params = where_learnings(where, d)
        text = None if query.mode is SearchMode.VECTOR else tsquery(query.text)
        vector = query_vector(query)
        limit = max(0, query.limit)
        params |= {"org_id": org_id, "tsquery": text, "vector": vector, "model": query.embed_model}
        params["limit"] = limit
        params["fts_limit"] = max(limit, ranking.FTS_FLOOR_RANK)
        kind = where.kinds[0] if len(set(where.kinds)) == 1 else None
        return cls(where_sql, params, text, vector, limit, kind)

    def run(self, conn: Conn, *, hnsw: bool) -> list[DictRow]:
        """The candidates, each with both arms' scores and ranks."""
        # prepare=False: planned with the actual values every time, so the scope's
        # selectivity decides between the btree indexes, GIN and (when allowed) HNSW.
        with conn.cursor(binary=True) as cur:
            cur.execute(self.statement(hnsw=hnsw), self.params, prepare=False)
            return cur.fetchall()

    def statement(self, *, hnsw: bool) -> str:
        """The SQL, with both arms when the query has text and a vector."""
        parts = {
            "columns": rows.LEARNING_COLUMNS,
            "fts": _Q.render("search_no_arm", {"name": "fts"}),
            "vec": _Q.render("search_no_arm", {"name": "vec"}),
            "fts_score": "NULL::real",
            "vector_score": "NULL::double precision",
        }
        if self.tsquery is not None:
            parts["fts"] = _Q.render("search_fts_arm", {"where": self.where_sql})
            parts["fts_score"] = _Q["search_fts_score"]
        if self.vector is not None:
            dim = str(vector_dim(len(self.vector)))  # a literal, so the partial HNSW index can match
            distance = _Q.render("search_hnsw_distance" if hnsw else "search_exact_distance", {"dim": dim})
            arm = {"where": self.where_sql, "dim": dim, "distance": distance}
            parts["vec"] = _Q.render("search_vector_arm", arm)
            parts["vector_score"] = _Q.render("search_vector_score", {"dim": dim})
        return _Q.render("search_candidates", parts)


def _candidates(found: Sequence[DictRow], filter_index: int, limit: int) -> list[Candidate]:
    """One filter's candidates: the rows of each arm's top ``limit``, scored on both arms.

    The full-text arm ranks down to the scope's floor (``fts_limit``: at least
    ``ranking.FTS_FLOOR_RANK``, which fusion measures every candidate against); its
    rows past ``limit`` only measure the spread of the scope's shares and are not candidates.
    """
    ran = any(r["fts_score"] is not None for r in found)  # the arm ran (it may match nothing)
    best, floor = ranking.fts_spread([_share(r) or 0.0 for r in found if r["fts_rank"] is not None])
    return [
        _candidate(r, filter_index, best if ran else None, floor)
        for r in found
        if (r["fts_rank"] or limit + 1) <= limit or (r["vector_rank"] or limit + 1) <= limit
    ]


def _share(r: DictRow) -> float | None:
    return None if r["fts_score"] is None else min(1.0, float(r["fts_score"]) / TS_RANK_CEILING)


def _candidate(
    r: DictRow, filter_index: int, fts_best: float | None = None, fts_floor: float = 0.0
) -> Candidate:
    fts = None if r["fts_score"] is None else float(r["fts_score"])
    sim = None if r["vector_score"] is None else float(r["vector_score"])
    return Candidate(
        learning=rows.learning_from(r),
        filter_index=filter_index,
        fts_score=fts,
        fts_norm=_share(r),
        fts_rank=r["fts_rank"],
        vector_score=sim,
        vector_rank=r["vector_rank"],
        fts_best=fts_best,
        fts_floor=fts_floor,
    )
