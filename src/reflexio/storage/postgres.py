"""PostgreSQL storage: the server backend, for deployments that run several API processes.

Why it is built this way:

* **Stateless processes.** Learning search runs in SQL, not in an in-process index as on
  SQLite, so any process can serve any org without warming or invalidating a cache. Each
  filter of a ``CandidateQuery`` is one statement: the full-text arm (a generated ``tsvector``
  column, GIN index) and the vector arm (pgvector) each rank their own top rows of the
  *filtered* scope, and the outer query scores every row of the union on both arms, so fusion
  never has to guess a missing score.
* **Scores on the same footing as the other backends.** ``fts_score`` is ``ts_rank`` of an OR
  query: the mean over the query's distinct lexemes of a term-frequency saturation that tops
  out at the lexeme weight (0.1 for our unweighted text; one occurrence gives 0.061).
  ``fts_norm`` is that rank over 0.1, the share of what the query could reach, as the BM25
  backends divide by the query's BM25 ceiling (there is no IDF: PostgreSQL keeps no corpus
  statistics). ``vector_score`` is the inner product, which is the cosine for the unit vectors
  every ``Embedder`` returns, equals what the memory and SQLite backends compute, and is 0
  rather than NaN for the zero vector a text of only stop words embeds to.
* **Vector index by kind and dimension, only when it pays.** The column has no fixed
  dimension; a partial HNSW expression index per kind and dimension
  (``learnings_hnsw_<dim>_<kind>``) serves broad scopes and the btree scope indexes plus an
  exact sort serve narrow ones. The vector arm filters on the dimension as a literal so the
  partial index matches. One graph per kind because every search filters on one kind: with
  one graph for all kinds, finding an agent version's rules (10k of 300k rows) walked past
  ~54k rows of other scopes, gave up short and fell back to an exact scan; in its kind's
  own graph the walk takes ~3 ms (bench/search at 100k per kind: agent-playbook search p95
  341 -> 64 ms, unified 338 -> 86 ms; the rest is the full-text arm ranking thousands of
  matching rows). Keeping an HNSW graph current costs about 1 ms per inserted row (a
  20k-row bulk save: 19 s instead of 0.7 s), which buys nothing below ~10k rows, so by
  default a kind's index is built on open once it holds ``hnsw_min_rows`` vectors of the
  embedder's dimension.
* **One connection per transaction.** Calls borrow from a ``psycopg_pool`` pool.
  ``transaction()`` binds one connection to the yielded view and to the calling thread, so
  every call inside the block, nested ones included, runs on it; each call inside a
  transaction runs in a savepoint, so a caught error (a duplicate request id) leaves the
  transaction usable, as on SQLite.
* **Learning writes serialised per org.** Each one first bumps ``org_state``; the row lock is
  held to commit, so sequence order is commit order and ``learning_changes`` could feed a
  cache later, and the schema stays parallel to SQLite's.
* **Bulk saves by binary COPY**, with ids taken from the identity sequence beforehand.

Modules of their own hold the job queue (``postgres_jobs``), the search statement
(``postgres_search``), opening and migrating the schema (``postgres_schema``) and the wire
adapters and binary COPY (``postgres_wire``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from copy import copy
from dataclasses import dataclass, replace
from typing import Any, Final

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from reflexio.embed import Embedder
from reflexio.errors import ConflictError, NotFoundError, StorageError
from reflexio.filters import (
    Candidate,
    CandidateQuery,
    InteractionFilter,
    LearningFilter,
    RequestFilter,
)
from reflexio.records import (
    ApiKeyRecord,
    Audit,
    Bookmark,
    EvaluationRecord,
    InteractionRecord,
    Learning,
    LearningEvent,
    LLMUsageRecord,
    RequestRecord,
    UsageSummary,
    now,
)
from reflexio.storage import common, rows
from reflexio.storage.postgres_jobs import PostgresJobQueue
from reflexio.storage.postgres_schema import migrate
from reflexio.storage.postgres_search import (
    Conn,
    SearchStatement,
    candidates,
    hnsw_index,
    one_row,
    tsquery,
    vector_dim,
)
from reflexio.storage.postgres_wire import (
    EVENT_COPY,
    LEARNING_COPY,
    VectorBinaryLoader,
    VectorTextLoader,
    copy_rows,
)
from reflexio.storage.sql import (
    POSTGRES,
    queries,
    where_events,
    where_interactions,
    where_learnings,
    where_requests,
)

__all__ = ["PostgresStorage"]


_Q = queries("postgres")
#: Keep this many sequence numbers of change log per org before pruning older entries.
_CHANGE_LOG_KEEP: Final = 200_000
#: The vector arm walks its kind's HNSW graph only for scopes the planner expects to hold at
#: least this many rows and this share of the graph. pgvector's cost model underrates filtered
#: graph walks: on 100k rows it chose HNSW for a 170-row scope at ten times the exact scan's
#: time, and a walk through a graph where few nodes pass the filter can give up short.
_HNSW_MIN_SCOPE: Final = 2_000
_HNSW_MIN_SHARE: Final = 0.01
_REQUEST_COLUMNS: Final = (
    "org_id, request_id, user_id, session_id, source, agent_version, created_at, payload_hash"
)
_INTERACTION_COLUMNS: Final = (
    "id, org_id, request_id, user_id, session_id, role, content, shadow_content, "
    "expert_content, user_action, user_action_description, interacted_image_url, "
    "image_encoding, tools_used, citations, retrieved_learnings, created_at"
)


@dataclass
class _Tx:
    """A borrowed connection inside an open transaction."""

    conn: Conn
    open: bool = True


@contextmanager
def _errors() -> Iterator[None]:
    """Connection-level failures surface as ``StorageError`` (the API maps it once)."""
    try:
        yield
    except psycopg.OperationalError as exc:
        raise StorageError(f"PostgreSQL failed: {exc}") from exc


class PostgresStorage(PostgresJobQueue):
    """The ``Storage`` protocol over PostgreSQL with pgvector.

    Args:
        url: A libpq URL (``postgresql://user:password@host:5432/db``).
        embedder: Makes and names the vectors stored with learnings.
        pool_size: Most connections this process holds.
        hnsw_min_rows: Build the HNSW index on open once this many vectors of the embedder's
            dimension are stored; 0 builds it at once, None never.
    """

    backend = "postgres"

    def __init__(
        self,
        url: str,
        embedder: Embedder,
        *,
        pool_size: int = 10,
        hnsw_min_rows: int | None = 10_000,
    ) -> None:
        self.url = url
        self.embedder = embedder
        self._local = threading.local()
        self._tx: _Tx | None = None
        with _errors():
            schema = migrate(url, embedder.dim, hnsw_min_rows)
            self._vector_type, self._hnsw = schema.vector_type, schema.hnsw
            self._iterative_scan = schema.iterative_scan
            self._pool: ConnectionPool[Conn] = ConnectionPool(
                url,
                min_size=1,
                max_size=pool_size,
                kwargs={"autocommit": True, "row_factory": dict_row},
                configure=self._configure,
                check=ConnectionPool.check_connection,
                open=False,
                name="reflexio",
            )
            self._pool.open(wait=True, timeout=30.0)

    # -- connections and transactions ---------------------------------------------------------
    def _configure(self, conn: Conn) -> None:
        """Per new pooled connection: numpy vectors in and out, filtered HNSW scans."""
        register_vector_info(conn, self._vector_type)
        conn.adapters.register_loader(self._vector_type.oid, VectorTextLoader)
        conn.adapters.register_loader(self._vector_type.oid, VectorBinaryLoader)
        if self._iterative_scan:
            # Without it a filtered HNSW scan stops after ef_search rows and can come back
            # short; relaxed order is fine because the arm re-sorts what it gets.
            conn.execute("SET hnsw.iterative_scan = relaxed_order")

    def _current(self) -> _Tx | None:
        tx = self._tx if self._tx is not None and self._tx.open else None
        tx = tx or getattr(self._local, "tx", None)
        return tx if tx is not None and tx.open else None

    @contextmanager
    def _read(self) -> Iterator[Conn]:
        tx = self._current()
        with _errors():
            if tx is not None:
                yield tx.conn
                return
            with self._pool.connection() as conn:
                yield conn

    @contextmanager
    def _write(self, *, savepoint: bool = True) -> Iterator[Conn]:
        """A transaction: a savepoint inside an open one, else a borrowed connection.

        ``savepoint=False`` joins an open transaction without one, saving two round trips,
        for statements whose failure no caller catches inside a transaction (there a failure
        aborts the whole transaction, which then rolls back anyway).
        """
        tx = self._current()
        with _errors():
            if tx is not None and not savepoint:
                yield tx.conn
                return
            if tx is not None:
                with tx.conn.transaction():
                    yield tx.conn
                return
            with self._pool.connection() as conn, conn.transaction():
                tx = self._local.tx = _Tx(conn)
                try:
                    yield conn
                finally:
                    tx.open = False
                    self._local.tx = None

    @contextmanager
    def transaction(self) -> Iterator[PostgresStorage]:
        """A transaction on one connection; calls on the yielded view (from any thread) or
        on this storage from this thread join it."""
        with self._write():
            tx = self._current()
            assert tx is not None
            if self._tx is tx:
                yield self
                return
            view = copy(self)
            view._tx = tx
            yield view

    def ping(self) -> None:
        tx = self._current()
        try:
            if tx is not None:
                tx.conn.execute("SELECT 1")
                return
            with self._pool.connection(timeout=5.0) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            raise StorageError(f"PostgreSQL is not answering: {exc}") from exc

    def close(self) -> None:
        self._pool.close()

    # -- log ----------------------------------------------------------------------------------
    def insert_request(
        self, request: RequestRecord, interactions: Sequence[InteractionRecord]
    ) -> list[InteractionRecord]:
        with self._write() as conn:
            try:
                conn.execute(_Q["insert_request"], _request_params(request))
            except psycopg.errors.UniqueViolation as exc:
                raise ConflictError(f"request {request.request_id!r} already exists") from exc
            params = [rows.interaction_params(r) for r in interactions]
            ids = _insert_returning_ids(conn, _Q["insert_interaction"], params)
        return [replace(r, id=i) for r, i in zip(interactions, ids, strict=True)]

    def get_request(self, org_id: str, request_id: str) -> RequestRecord | None:
        params = {"org_id": org_id, "request_id": request_id}
        with self._read() as conn:
            r = conn.execute(_Q["get_request"], params).fetchone()
        return rows.request_from(r) if r else None

    def list_requests(
        self, org_id: str, where: RequestFilter, *, limit: int, offset: int = 0
    ) -> list[RequestRecord]:
        sql, params = where_requests(where, POSTGRES)
        with self._read() as conn:
            found = conn.execute(
                f"SELECT {_REQUEST_COLUMNS} FROM requests WHERE org_id = %s AND {sql} "
                'ORDER BY created_at DESC, request_id COLLATE "C" DESC LIMIT %s OFFSET %s',
                [org_id, *params, limit, offset],
            ).fetchall()
        return [rows.request_from(r) for r in found]

    def list_interactions(
        self,
        org_id: str,
        where: InteractionFilter,
        *,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[InteractionRecord]:
        sql, params = where_interactions(where, POSTGRES)
        order = "DESC" if newest_first else "ASC"
        with self._read() as conn:
            found = conn.execute(
                f"SELECT {_INTERACTION_COLUMNS} FROM interactions WHERE org_id = %s AND {sql} "
                f"ORDER BY id {order} LIMIT %s",
                [org_id, *params, limit],
            ).fetchall()
        return [rows.interaction_from(r) for r in found]

    def search_interactions(
        self, org_id: str, where: InteractionFilter, text: str, *, limit: int
    ) -> list[tuple[InteractionRecord, float]]:
        words = tsquery(text)
        if words is None:
            return []
        sql, params = where_interactions(where, POSTGRES)
        query = _Q["search_interactions"].format(columns=_INTERACTION_COLUMNS, where=sql)
        with self._read() as conn:
            found = conn.execute(
                query, [words, org_id, *params, words, max(0, limit)], prepare=False
            ).fetchall()
        return [(rows.interaction_from(r), float(r["score"])) for r in found]

    def delete_log(
        self,
        org_id: str,
        *,
        requests: RequestFilter | None = None,
        interactions: InteractionFilter | None = None,
    ) -> tuple[int, int]:
        n_req = n_int = 0
        with self._write() as conn:
            if requests is not None:
                sql, params = where_requests(requests, POSTGRES)
                chosen = f"SELECT request_id FROM requests WHERE org_id = %s AND {sql}"
                n_int += conn.execute(
                    f"DELETE FROM interactions WHERE org_id = %s AND request_id IN ({chosen})",
                    [org_id, org_id, *params],
                ).rowcount
                n_req += conn.execute(
                    f"DELETE FROM requests WHERE org_id = %s AND {sql}", [org_id, *params]
                ).rowcount
            if interactions is not None:
                sql, params = where_interactions(interactions, POSTGRES)
                n_int += conn.execute(
                    f"DELETE FROM interactions WHERE org_id = %s AND {sql}", [org_id, *params]
                ).rowcount
        return n_req, n_int

    # -- learnings ----------------------------------------------------------------------------
    def save_learnings(self, rows_in: Sequence[Learning], audit: Audit) -> list[Learning]:
        if not rows_in:
            return []
        prepared = common.prepare_learnings(rows_in, self.embedder)
        org_id = prepared[0].org_id
        with self._write() as conn:
            seq = self._bump_seq(conn, org_id)
            old = _by_ids(conn, org_id, [r.id for r in prepared if r.id])
            before = {r.id: r for r in old}
            saved = [_keep_created(row, before) for row in prepared]
            try:
                updates = [rows.learning_params(r, seq=seq, postgres=True) for r in saved if r.id]
                if updates:
                    with conn.cursor() as cur:
                        cur.executemany(_Q["update_learning"], updates)
                saved = _insert_learnings(conn, saved, seq)
            except psycopg.errors.UniqueViolation as exc:
                detail = exc.diag.message_detail or ""
                raise ConflictError(f"profile_id is already used in the org: {detail}") from exc
            events = common.save_events(saved, before, audit)
            self._record(conn, seq, org_id, [r.id for r in saved], events)
            return saved

    def _bump_seq(self, conn: Conn, org_id: str) -> int:
        """Take the org's learning-write lock (to commit) and its next sequence number."""
        row = conn.execute(_Q["bump_seq"], {"org_id": org_id}).fetchone()
        assert row is not None
        seq = int(row["learning_seq"])
        if seq % 1000 == 0 and seq > _CHANGE_LOG_KEEP:
            upto = {"org_id": org_id, "upto": seq - _CHANGE_LOG_KEEP}
            conn.execute(_Q["prune_changes"], upto)
            conn.execute(_Q["set_pruned"], upto)
        return seq

    def _record(
        self,
        conn: Conn,
        seq: int,
        org_id: str,
        ids: Sequence[int],
        events: Sequence[LearningEvent],
    ) -> None:
        conn.execute(_Q["insert_changes"], {"org_id": org_id, "seq": seq, "ids": list(ids)})
        params = (rows.event_params(e) for e in events)
        copy_rows(conn, "learning_events", EVENT_COPY, ([p[c] for c in EVENT_COPY] for p in params))

    def _select(
        self, conn: Conn, org_id: str, where: LearningFilter, tail: str = "", *extra: Any
    ) -> list[Learning]:
        sql, params = where_learnings(where, POSTGRES)
        return _learnings(
            conn,
            f"SELECT {rows.LEARNING_COLUMNS} FROM learnings WHERE org_id = %s AND {sql} {tail}",
            [org_id, *params, *extra],
        )

    def get_learnings(self, org_id: str, where: LearningFilter) -> list[Learning]:
        with self._read() as conn:
            return self._select(conn, org_id, where, "ORDER BY id")

    def list_learnings(
        self,
        org_id: str,
        where: LearningFilter,
        *,
        limit: int,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[Learning]:
        order = "DESC" if newest_first else "ASC"
        tail = f"ORDER BY updated_at {order}, id {order} LIMIT %s OFFSET %s"
        with self._read() as conn:
            return self._select(conn, org_id, where, tail, limit, offset)

    def count_learnings(self, org_id: str, where: LearningFilter) -> int:
        sql, params = where_learnings(where, POSTGRES)
        with self._read() as conn:
            row = conn.execute(
                f"SELECT count(*) AS n FROM learnings WHERE org_id = %s AND {sql}",
                [org_id, *params],
            ).fetchone()
        return int(row["n"]) if row else 0

    def update_learnings(
        self, org_id: str, where: LearningFilter, changes: dict[str, Any], audit: Audit
    ) -> list[int]:
        common.check_changes(changes)
        with self._write() as conn:
            before = self._select(conn, org_id, where, "ORDER BY id")
            if not before:
                return []
            seq = self._bump_seq(conn, org_id)
            params = rows.learning_params(before[0].copy(**changes), seq=seq, postgres=True)
            ids = [r.id for r in before]
            values = {col: params[col] for col in changes}
            values |= {"updated_at": int(now()), "seq": seq, "org_id": org_id, "ids": ids}
            # Column names come from common.MUTABLE_FIELDS (check_changes refused others).
            sets = ", ".join(f"{col} = %({col})s" for col in changes)
            conn.execute(
                f"UPDATE learnings SET {sets}, updated_at = %(updated_at)s, seq = %(seq)s "
                "WHERE org_id = %(org_id)s AND id = ANY(%(ids)s::bigint[])",
                values,
            )
            self._record(conn, seq, org_id, ids, common.change_events(before, changes, audit))
            return ids

    def delete_learnings(self, org_id: str, where: LearningFilter, audit: Audit) -> int:
        with self._write() as conn:
            doomed = self._select(conn, org_id, where, "ORDER BY id")
            self._delete_rows(conn, org_id, doomed, common.delete_events(doomed, audit))
            return len(doomed)

    def _delete_rows(
        self,
        conn: Conn,
        org_id: str,
        doomed: Sequence[Learning],
        events: Sequence[LearningEvent],
    ) -> None:
        if not doomed:
            return
        seq = self._bump_seq(conn, org_id)
        ids = [r.id for r in doomed]
        conn.execute("DELETE FROM learnings WHERE org_id = %s AND id = ANY(%s::bigint[])", [org_id, ids])
        self._record(conn, seq, org_id, ids, events)

    # -- search -------------------------------------------------------------------------------
    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        out: list[Candidate] = []
        with self._read() as conn:
            for i, where in enumerate(query.filters):
                out.extend(candidates(self._searchone_row(conn, org_id, where, query), i, query.limit))
        return out

    def _searchone_row(
        self, conn: Conn, org_id: str, where: LearningFilter, query: CandidateQuery
    ) -> list[DictRow]:
        search = SearchStatement.of(org_id, where, query)
        hnsw = search.vector is not None and self._hnsw_pays(conn, search)
        found = search.run(conn, hnsw=hnsw)
        if hnsw and sum(1 for r in found if r["vector_rank"]) < search.limit:
            # The filtered graph walk gave up before it found enough rows of the scope.
            found = search.run(conn, hnsw=False)
        return found

    def _hnsw_pays(self, conn: Conn, search: SearchStatement) -> bool:
        """Whether the scope is big enough, absolutely and as a share of its kind's graph, for
        a filtered HNSW walk to beat an exact scan (planner estimates, ~0.3 ms)."""
        assert search.vector is not None
        dim = vector_dim(len(search.vector))
        if search.kind is None or (dim, search.kind) not in self._hnsw:
            return False
        sql = _Q["scope_estimate"].format(where=search.where_sql, dim=dim)
        params = [search.org_id, *search.where_params, search.model]
        plan = one_row(conn, sql, params, prepare=False)["QUERY PLAN"]
        rows = float(plan[0]["Plan"]["Plan Rows"])
        graph = float(one_row(conn, _Q["index_rows"], {"name": hnsw_index(dim, search.kind)})["n"])
        return rows >= max(_HNSW_MIN_SCOPE, _HNSW_MIN_SHARE * graph)

    def list_events(
        self,
        org_id: str,
        *,
        learning_ids: Sequence[int] | None = None,
        user_id: str | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[LearningEvent]:
        where, params = where_events(POSTGRES, learning_ids=learning_ids, user_id=user_id, kinds=kinds)
        with self._read() as conn:
            found = conn.execute(
                f"SELECT * FROM learning_events WHERE org_id = %s AND {where} ORDER BY id DESC LIMIT %s",
                [org_id, *params, limit],
            ).fetchall()
        return [rows.event_from(r) for r in found]

    def add_exposures(self, org_id: str, session_id: str, refs: Sequence[tuple[str, str]]) -> None:
        if not refs:
            return
        t = now()
        with self._write() as conn, conn.cursor() as cur:
            cur.executemany(_Q["add_exposure"], [(org_id, session_id, k, i, t) for k, i in refs])

    def list_exposures(self, org_id: str, session_id: str) -> set[tuple[str, str]]:
        with self._read() as conn:
            found = conn.execute(
                _Q["list_exposures"], {"org_id": org_id, "session_id": session_id}
            ).fetchall()
        return {(r["kind"], r["learning_id"]) for r in found}

    # -- evaluations, bookmarks, configs --------------------------------------------------
    def add_evaluations(self, rows_in: Sequence[EvaluationRecord]) -> list[EvaluationRecord]:
        t = now()
        params = [rows.evaluation_params(r, r.created_at or t) for r in rows_in]
        with self._write() as conn:
            ids = _insert_returning_ids(conn, _Q["insert_evaluation"], params)
        return [rows.evaluation_from({**p, "id": i}) for p, i in zip(params, ids, strict=True)]

    def list_evaluations(
        self,
        org_id: str,
        *,
        kind: str,
        user_id: str | None = None,
        session_id: str | None = None,
        agent_version: str | None = None,
        created_after: float | None = None,
        created_before: float | None = None,
        limit: int = 100,
    ) -> list[EvaluationRecord]:
        clauses, params = ["org_id = %s", "kind = %s"], list[Any]([org_id, kind])
        for clause, value in (
            ("user_id = %s", user_id),
            ("session_id = %s", session_id),
            ("agent_version = %s", agent_version),
            ("created_at >= %s", created_after),
            ("created_at <= %s", created_before),
        ):
            if value is not None:
                clauses.append(clause)
                params.append(value)
        with self._read() as conn:
            found = conn.execute(
                f"SELECT * FROM evaluations WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT %s",
                [*params, limit],
            ).fetchall()
        return [rows.evaluation_from(r) for r in found]

    def get_bookmark(self, org_id: str, user_id: str, extractor: str) -> Bookmark | None:
        params = {"org_id": org_id, "user_id": user_id, "extractor": extractor}
        with self._read() as conn:
            r = conn.execute(_Q["get_bookmark"], params).fetchone()
        return rows.bookmark_from(r) if r else None

    def put_bookmark(self, bookmark: Bookmark) -> None:
        with self._write() as conn:
            conn.execute(
                _Q["put_bookmark"],
                {
                    "org_id": bookmark.org_id,
                    "user_id": bookmark.user_id,
                    "extractor": bookmark.extractor,
                    "last_interaction_id": bookmark.last_interaction_id,
                    "updated_at": now(),
                },
            )

    def get_org_config(self, org_id: str) -> dict[str, Any] | None:
        with self._read() as conn:
            r = conn.execute(_Q["get_config"], {"org_id": org_id}).fetchone()
        return rows.loads(r["config"]) if r else None

    def put_org_config(self, org_id: str, config: dict[str, Any]) -> None:
        params = {"org_id": org_id, "config": rows.dumps(config), "updated_at": now()}
        with self._write() as conn:
            conn.execute(_Q["put_config"], params)

    def clear_user(self, org_id: str, user_id: str) -> dict[str, int]:
        who = {"org_id": org_id, "user_id": user_id}
        with self._write() as conn:
            conn.execute(_Q["clear_exposures"], who)
            n_req, n_int = self.delete_log(
                org_id,
                requests=RequestFilter(user_id=user_id),
                interactions=InteractionFilter(user_id=user_id),
            )
            doomed = self._select(conn, org_id, LearningFilter(user_id=user_id), "ORDER BY id")
            self._delete_rows(conn, org_id, doomed, [])
            counts = {"requests": n_req, "interactions": n_int, **common.count_kinds(doomed)}
            for query, key in (
                ("clear_user_events", "events"),
                ("clear_user_evaluations", "evaluations"),
                ("clear_user_bookmarks", "bookmarks"),
            ):
                counts[key] = conn.execute(_Q[query], who).rowcount
            return counts

    # -- api keys ---------------------------------------------------------------------------
    def add_api_key(self, key: ApiKeyRecord) -> ApiKeyRecord:
        t = key.created_at or now()
        params = {
            "org_id": key.org_id,
            "key_hash": key.key_hash,
            "prefix": key.prefix,
            "name": key.name,
            "created_at": t,
        }
        with self._write() as conn:
            row = conn.execute(_Q["insert_api_key"], params).fetchone()
        assert row is not None
        return replace(key, id=int(row["id"]), created_at=t, revoked_at=None)

    def find_api_key(self, key_hash: str) -> ApiKeyRecord | None:
        with self._read() as conn:
            r = conn.execute(_Q["find_api_key"], {"key_hash": key_hash}).fetchone()
        return rows.api_key_from(r) if r else None

    def list_api_keys(self, org_id: str | None = None) -> list[ApiKeyRecord]:
        with self._read() as conn:
            found = conn.execute(_Q["list_api_keys"], {"org_id": org_id}).fetchall()
        return [rows.api_key_from(r) for r in found]

    def revoke_api_key(self, key_id: int) -> bool:
        with self._write() as conn:
            return conn.execute(_Q["revoke_api_key"], {"id": key_id, "now": now()}).rowcount > 0

    def has_api_keys(self) -> bool:
        with self._read() as conn:
            row = conn.execute(_Q["has_api_keys"]).fetchone()
        return bool(row and row["present"])

    # -- vectors ----------------------------------------------------------------------------
    def orgs_with_stale_vectors(self) -> list[str]:
        with self._read() as conn:
            found = conn.execute(_Q["orgs_with_stale_vectors"], {"model": self.embedder.name}).fetchall()
        return [str(r["org_id"]) for r in found]

    def refresh_vectors(self, org_id: str, *, limit: int) -> int:
        with self._write() as conn:
            stale = _learnings(
                conn,
                f"SELECT {rows.LEARNING_COLUMNS} FROM learnings WHERE org_id = %s "
                "AND (embed_model <> %s OR embedding IS NULL) LIMIT %s",
                [org_id, self.embedder.name, limit],
            )
            refreshed = common.reembedded(stale, self.embedder)
            if not refreshed:
                return 0
            seq = self._bump_seq(conn, org_id)
            params = [
                {
                    "id": r.id,
                    "org_id": org_id,
                    "embedding": r.embedding,
                    "embed_model": r.embed_model,
                    "text_hash": r.text_hash,
                    "seq": seq,
                }
                for r in refreshed
            ]
            with conn.cursor() as cur:
                cur.executemany(_Q["set_vector"], params)
            self._record(conn, seq, org_id, [r.id for r in refreshed], [])
            return len(refreshed)

    # -- LLM accounting ---------------------------------------------------------------------
    def add_llm_usage(self, rows_in: Sequence[LLMUsageRecord]) -> None:
        if not rows_in:
            return
        t = now()
        with self._write() as conn, conn.cursor() as cur:
            cur.executemany(
                _Q["insert_llm_usage"], [rows.usage_params(r, r.created_at or t) for r in rows_in]
            )

    def llm_usage(
        self, org_id: str, *, job_id: int | None = None, since: float | None = None
    ) -> UsageSummary:
        params = {"org_id": org_id, "job_id": job_id, "since": since}
        with self._read() as conn:
            found = conn.execute(_Q["llm_usage_by_role"], params).fetchall()
        return UsageSummary.of_roles({r["role"]: rows.usage_totals_from(r) for r in found})


# -- row helpers --------------------------------------------------------------------------------
def _insert_returning_ids(conn: Conn, query: str, params: Sequence[Mapping[str, Any]]) -> list[int]:
    """Run an ``INSERT ... RETURNING id`` per parameter set (pipelined); ids in order."""
    if not params:
        return []
    ids = []
    with conn.cursor() as cur:
        cur.executemany(query, params, returning=True)
        while True:
            row = cur.fetchone()
            assert row is not None
            ids.append(int(row["id"]))
            if not cur.nextset():
                return ids


def _learnings(conn: Conn, query: str, params: Sequence[Any]) -> list[Learning]:
    # Binary results: vectors arrive as raw float4s instead of text to parse.
    with conn.cursor(binary=True) as cur:
        cur.execute(query, params)
        return [rows.learning_from(r) for r in cur]


def _by_ids(conn: Conn, org_id: str, ids: Sequence[int]) -> list[Learning]:
    if not ids:
        return []
    return _learnings(
        conn,
        f"SELECT {rows.LEARNING_COLUMNS} FROM learnings WHERE org_id = %s AND id = ANY(%s::bigint[])",
        [org_id, list(ids)],
    )


def _keep_created(row: Learning, before: dict[int, Learning]) -> Learning:
    """An update keeps its creation time; an id outside the org is not found."""
    if not row.id:
        return row
    old = before.get(row.id)
    if old is None or old.org_id != row.org_id:
        raise NotFoundError(f"{row.kind.value} {row.id} not found")
    return row.copy(created_at=old.created_at)


def _insert_learnings(conn: Conn, saved: list[Learning], seq: int) -> list[Learning]:
    """COPY the rows without an id (ids drawn from the sequence first); returns all rows."""
    fresh = [i for i, r in enumerate(saved) if not r.id]
    if not fresh:
        return saved
    ids = [int(r["id"]) for r in conn.execute(_Q["learning_ids"], {"n": len(fresh)})]
    saved = list(saved)
    for i, new_id in zip(fresh, ids, strict=True):
        saved[i] = saved[i].copy(id=new_id)
    params = (rows.learning_params(saved[i], seq=seq, postgres=True) for i in fresh)
    copy_rows(conn, "learnings", LEARNING_COPY, ([p[c] for c in LEARNING_COPY] for p in params))
    return saved


def _request_params(r: RequestRecord) -> dict[str, Any]:
    return {
        "org_id": r.org_id,
        "request_id": r.request_id,
        "user_id": r.user_id,
        "session_id": r.session_id,
        "source": r.source,
        "agent_version": r.agent_version,
        "created_at": r.created_at,
        "payload_hash": r.payload_hash,
    }
