"""The PostgreSQL engine: the server backend, for deployments that run several API processes.

Why it is built this way:

* **One connection per transaction.** Calls borrow from a ``psycopg_pool`` pool.
  ``transaction()`` binds one connection to the yielded connector and to the calling thread,
  so every call inside the block, nested ones included, runs on it; each nested call runs in
  a savepoint, so a caught error (a duplicate request id) leaves the transaction usable, as
  on SQLite. The publish path's job statements join without one (``savepoint=False``).
* **Search from the in-process index, within a budget.** Each process answers an org's
  searches from the same in-process index SQLite uses, kept exact across processes by the
  change log (``storage.postgres_index`` says why and how); orgs that do not fit the memory
  budget, and searches inside a transaction, are answered in SQL over pgvector and a
  generated ``tsvector`` (``storage.postgres_search``).
* **Bulk saves by binary COPY**, with ids drawn from the identity sequence beforehand.
* **Vector indexes only where they pay**: opening builds a kind's HNSW graph once it holds
  ``hnsw_min_rows`` vectors of the embedder's dimension (``storage.postgres_schema``); keeping
  a graph current makes every insert costlier, which buys nothing while exact scans are fast.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from copy import copy
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool

from reflexio.errors import ConflictError, StorageError
from reflexio.filters import Candidate, CandidateQuery
from reflexio.records import Vector
from reflexio.storage.connector import Params, Row
from reflexio.storage.postgres_index import IndexBudget, PostgresIndexes
from reflexio.storage.postgres_schema import migrate
from reflexio.storage.postgres_search import PostgresSearch, tsquery
from reflexio.storage.postgres_types import Conn, VectorBinaryLoader, VectorTextLoader, copy_rows
from reflexio.storage.queries import Dialect, queries

__all__ = ["POSTGRES", "PostgresConnector"]


def _array(values: Sequence[Any]) -> list[Any]:
    return list(values)


def _vector(vector: Vector) -> Vector:
    return vector  # pgvector's dumper, registered on every connection, sends it


#: Lists travel as arrays, vectors as pgvector values.
POSTGRES: Final = Dialect("postgres", "%({})s", bind_list=_array, bind_vector=_vector)
_Q = queries("postgres")
#: Planned with their values on every call: a generic plan cannot weigh a filter's selectivity.
_PLAN_EACH_TIME: Final = frozenset({"search_interactions"})


def _has_rows(cur: psycopg.Cursor[Any]) -> bool:
    """Whether the statement returned a row set (``description`` would build every column's
    metadata just to answer that)."""
    result = cur.pgresult
    return result is not None and result.nfields > 0


@dataclass
class _Tx:
    """A borrowed connection inside an open transaction."""

    conn: Conn
    open: bool = True


class _DriverErrors:
    """Unique violations surface as ``ConflictError``, connection failures as ``StorageError``.

    A class rather than a ``@contextmanager`` generator: every statement passes through it,
    and a generator-based manager costs several times more per use.
    """

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, psycopg.errors.UniqueViolation):
            raise ConflictError(exc.diag.message_detail or str(exc)) from exc
        if isinstance(exc, psycopg.OperationalError):
            raise StorageError(f"PostgreSQL failed: {exc}") from exc


_driver_errors: Final = _DriverErrors()


class _Held:
    """The transaction's own connection for one statement (see ``_DriverErrors``: a class
    because this runs for every statement of every transaction)."""

    __slots__ = ("conn",)

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def __enter__(self) -> Conn:
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        _driver_errors.__exit__(kind, exc, tb)


class PostgresConnector:
    """The ``Connector`` over a PostgreSQL database with pgvector.

    Args:
        url: A libpq URL (``postgresql://user:password@host:5432/db``).
        dim: The embedder's vector dimension (which HNSW graphs to keep).
        pool_size: Most connections this process holds.
        hnsw_min_rows: Build a kind's HNSW index on open once this many vectors of ``dim``
            are stored; 0 builds it at once, None never.
        search_index_bytes: The memory budget of this process's in-process search indexes
            (``storage.postgres_index``); 0 answers every search in SQL.
    """

    name = "postgres"
    dialect = POSTGRES

    def __init__(
        self,
        url: str,
        *,
        dim: int,
        pool_size: int = 10,
        hnsw_min_rows: int | None = 10_000,
        search_index_bytes: int = 0,
    ) -> None:
        self.url = url
        self._local = threading.local()
        self._tx: _Tx | None = None
        with _driver_errors:
            schema = migrate(url, dim, hnsw_min_rows)
            self._vector_type, self._iterative_scan = schema.vector_type, schema.iterative_scan
            self.search = PostgresSearch(POSTGRES, schema.hnsw)
            self.indexes = PostgresIndexes(self, IndexBudget(search_index_bytes, dim))
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

    def _configure(self, conn: Conn) -> None:
        """Per new pooled connection: numpy vectors in and out, filtered HNSW scans."""
        register_vector_info(conn, self._vector_type)
        conn.adapters.register_loader(self._vector_type.oid, VectorTextLoader)
        conn.adapters.register_loader(self._vector_type.oid, VectorBinaryLoader)
        if self._iterative_scan:
            conn.execute(_Q["enable_iterative_scan"])

    # -- connections and transactions -----------------------------------------------------------
    def _current(self) -> _Tx | None:
        tx = self._tx if self._tx is not None and self._tx.open else None
        tx = tx or getattr(self._local, "tx", None)
        return tx if tx is not None and tx.open else None

    def connection(self) -> AbstractContextManager[Conn]:
        """The open transaction's connection, or one borrowed for the block."""
        tx = self._current()
        return _Held(tx.conn) if tx is not None else self._borrow()

    @contextmanager
    def _borrow(self) -> Iterator[Conn]:
        with _driver_errors, self._pool.connection() as conn:
            yield conn

    @contextmanager
    def transaction(self, *, savepoint: bool = True) -> Iterator[PostgresConnector]:
        """A transaction on one connection: a savepoint inside an open one (unless
        ``savepoint=False``), else a borrowed connection, bound to this thread and to the
        yielded connector (which other threads may use)."""
        tx = self._current()
        with _driver_errors:
            if tx is not None and not savepoint:
                yield self._bound(tx)
            elif tx is not None:
                with tx.conn.transaction():
                    yield self._bound(tx)
            else:
                with self._pool.connection() as conn, conn.transaction():
                    tx = self._local.tx = _Tx(conn)
                    try:
                        yield self._bound(tx)
                    finally:
                        tx.open = False
                        self._local.tx = None

    def _bound(self, tx: _Tx) -> PostgresConnector:
        if self._tx is tx:
            return self
        view = copy(self)
        view._tx = tx
        return view

    # -- primitives -------------------------------------------------------------------------------
    def execute(self, query: str, params: Params | None = None, **parts: str) -> int:
        with self.connection() as conn:
            return conn.execute(_Q.render(query, parts), params, prepare=self._prepare(query)).rowcount

    def one(self, query: str, params: Params | None = None, **parts: str) -> Row | None:
        with self.connection() as conn, conn.cursor(binary=True) as cur:
            cur.execute(_Q.render(query, parts), params, prepare=self._prepare(query))
            return cur.fetchone() if _has_rows(cur) else None

    def all(self, query: str, params: Params | None = None, **parts: str) -> list[Row]:
        # Binary results: vectors arrive as raw float4s instead of text to parse.
        with self.connection() as conn, conn.cursor(binary=True) as cur:
            cur.execute(_Q.render(query, parts), params, prepare=self._prepare(query))
            return list(cur.fetchall()) if _has_rows(cur) else []

    def tuples(self, query: str, params: Params) -> list[tuple[Any, ...]]:
        """Rows as tuples, for the search index's bulk load (read by position)."""
        with self.connection() as conn, conn.cursor(binary=True, row_factory=tuple_row) as cur:
            cur.execute(_Q[query], params, prepare=self._prepare(query))
            return cur.fetchall()

    def many(self, query: str, rows: Sequence[Params]) -> None:
        if rows:
            with self.connection() as conn, conn.cursor() as cur:
                cur.executemany(_Q[query], rows)

    def insert(self, query: str, rows: Sequence[Params]) -> list[int]:
        """Pipelined: one round trip for the batch, the ids read back in order."""
        if not rows:
            return []
        ids = []
        with self.connection() as conn, conn.cursor() as cur:
            cur.executemany(_Q[query], rows, returning=True)
            while True:
                row = cur.fetchone()
                assert row is not None
                ids.append(int(row["id"]))
                if not cur.nextset():
                    return ids

    @staticmethod
    def _prepare(query: str) -> bool | None:
        return False if query in _PLAN_EACH_TIME else None

    def ping(self) -> None:
        tx = self._current()
        try:
            if tx is not None:
                tx.conn.execute(_Q["ping"])
                return
            with self._pool.connection(timeout=5.0) as conn:
                conn.execute(_Q["ping"])
        except psycopg.Error as exc:
            raise StorageError(f"PostgreSQL is not answering: {exc}") from exc

    def close(self) -> None:
        self._pool.close()

    # -- hooks ------------------------------------------------------------------------------------
    def bulk_insert(self, table: str, rows: Sequence[Params], *, returning_ids: bool) -> list[int]:
        """Binary COPY (ids drawn from the table's sequence first: COPY cannot return them)."""
        ids: list[int] = []
        with self.connection() as conn:
            if returning_ids:
                drawn = conn.execute(_Q["draw_ids"], {"table": table, "n": len(rows)}).fetchall()
                ids = [int(r["id"]) for r in drawn]
                rows = [{**row, "id": i} for row, i in zip(rows, ids, strict=True)]
            copy_rows(conn, table, rows)
        return ids

    def text_query(self, text: str) -> str | None:
        """An OR ``tsquery`` (the generated ``tsvector`` column is always current)."""
        return tsquery(text)

    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        """From the org's in-process index when it fits the budget and no transaction is
        open on this thread (``storage.postgres_index``), else in SQL (``storage.postgres_search``)."""
        if self._current() is None:
            found = self.indexes.candidates(org_id, query)
            if found is not None:
                return found
        with self.connection() as conn:
            return self.search.candidates(conn, org_id, query)

    def warm_search(self) -> None:
        """Build the in-process index of every org that fits the budget."""
        self.indexes.warm()
