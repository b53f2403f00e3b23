"""PostgreSQL candidate search: the statement for one filter, and reading its rows back.

``PostgresStorage.search_candidates`` runs one ``SearchStatement`` per filter of a
``CandidateQuery``: a full-text arm (``tsvector`` matched by an OR ``tsquery``, ranked by
``ts_rank``) and a vector arm (pgvector cosine distance, exact or through the HNSW index
when the storage decides the graph walk pays), joined so every candidate carries both arms'
scores and ranks. The SQL fragments live in ``sql/postgres/queries.sql``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import psycopg
from psycopg.rows import DictRow

from reflexio import ranking
from reflexio.errors import ValidationError
from reflexio.filters import Candidate, CandidateQuery, LearningFilter, SearchMode
from reflexio.records import LearningKind, Vector
from reflexio.storage import rows
from reflexio.storage.sql import POSTGRES, queries, where_learnings

__all__ = [
    "TS_RANK_CEILING",
    "Conn",
    "SearchStatement",
    "candidate",
    "candidates",
    "hnsw_index",
    "one_row",
    "query_vector",
    "tsquery",
    "vector_dim",
]

_Q = queries("postgres")
#: The connection type of every PostgreSQL storage module (rows come back as dicts).
Conn = psycopg.Connection[DictRow]

#: ``ts_rank``'s ceiling for lexemes without a weight label (weight D = 0.1).
TS_RANK_CEILING: Final = 0.1
#: pgvector's limit: a ``vector`` has at most 16000 dimensions.
MAX_DIM: Final = 16_000


def one_row(
    conn: Conn, query: str, params: Mapping[str, Any] | Sequence[Any], *, prepare: bool | None = None
) -> DictRow:
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


@dataclass(frozen=True, slots=True)
class SearchStatement:
    """One filter of a ``CandidateQuery``, compiled once for its statement(s)."""

    org_id: str
    where_sql: str
    where_params: list[Any]
    tsquery: str | None
    vector: Vector | None
    model: str
    limit: int
    #: The one kind the filter selects (None for several or any): each kind has its own graph.
    kind: LearningKind | None = None

    @classmethod
    def of(cls, org_id: str, where: LearningFilter, query: CandidateQuery) -> SearchStatement:
        where_sql, where_params = where_learnings(where, POSTGRES)
        text = None if query.mode is SearchMode.VECTOR else tsquery(query.text)
        vector = query_vector(query)
        limit = max(0, query.limit)
        kind = where.kinds[0] if len(set(where.kinds)) == 1 else None
        return cls(org_id, where_sql, where_params, text, vector, query.embed_model, limit, kind)

    @property
    def fts_limit(self) -> int:
        """Rows the full-text arm ranks: the limit, and at least down to the scope's floor
        (``ranking.FTS_FLOOR_RANK``), which fusion measures every candidate against."""
        return max(self.limit, ranking.FTS_FLOOR_RANK)

    def run(self, conn: Conn, *, hnsw: bool) -> list[DictRow]:
        """The candidates, each with both arms' scores and ranks."""
        sql, params = self.statement(hnsw=hnsw)
        # prepare=False: planned with the actual values every time, so the scope's
        # selectivity decides between the btree indexes, GIN and (when allowed) HNSW.
        with conn.cursor(binary=True) as cur:
            cur.execute(sql, params, prepare=False)
            return cur.fetchall()

    def statement(self, *, hnsw: bool) -> tuple[str, list[Any]]:
        """The SQL and its parameters, in the order they appear in it."""
        parts = {
            "columns": rows.LEARNING_COLUMNS,
            "fts": _Q["search_no_arm"].format(name="fts"),
            "vec": _Q["search_no_arm"].format(name="vec"),
            "fts_score": "NULL::real",
            "vector_score": "NULL::double precision",
        }
        scope = [self.org_id, *self.where_params]
        arms: list[Any] = []
        scores: list[Any] = []
        if self.tsquery is not None:
            parts["fts"] = _Q["search_fts_arm"].format(where=self.where_sql)
            parts["fts_score"] = _Q["search_fts_score"]
            arms += [self.tsquery, *scope, self.tsquery, self.fts_limit]
            scores += [self.tsquery]
        if self.vector is not None:
            dim = vector_dim(len(self.vector))  # a literal, so the partial HNSW index can match
            distance = _Q["search_hnsw_distance" if hnsw else "search_exact_distance"]
            parts["vec"] = _Q["search_vector_arm"].format(
                where=self.where_sql, dim=dim, distance=distance.format(dim=dim)
            )
            parts["vector_score"] = _Q["search_vector_score"].format(dim=dim)
            arms += [self.vector, *scope, self.model, self.limit]
            scores += [self.model, self.vector]
        return _Q["search_candidates"].format(**parts), arms + scores


def candidates(found: Sequence[DictRow], filter_index: int, limit: int) -> list[Candidate]:
    """One filter's candidates: the rows of each arm's top ``limit``, scored on both arms.

    The full-text arm ranks down to the scope's floor (``SearchStatement.fts_limit``); its
    rows past ``limit`` only measure the spread of the scope's shares and are not candidates.
    """
    ran = any(r["fts_score"] is not None for r in found)  # the arm ran (it may match nothing)
    best, floor = ranking.fts_spread([_share(r) or 0.0 for r in found if r["fts_rank"] is not None])
    return [
        candidate(r, filter_index, best if ran else None, floor)
        for r in found
        if (r["fts_rank"] or limit + 1) <= limit or (r["vector_rank"] or limit + 1) <= limit
    ]


def _share(r: DictRow) -> float | None:
    return None if r["fts_score"] is None else min(1.0, float(r["fts_score"]) / TS_RANK_CEILING)


def candidate(
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
